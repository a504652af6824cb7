"""A slave whose master died: its config sync must not log that it "goes on" while there is no master.

Seen with a SYNC_MASTER killed with -9: the slave's first sync round after the kill failed (connection
refused), then the name servers forgot the master, sync_once found no master and did nothing, and the slave
logged "slave sync with the master goes on after 2 failed round(s)" although no round reached a master (4.9.3's
SlaveSynchronize does nothing without a master address either, and says nothing).  The run of failures now
ends only with a round that reached the master.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from rocketstore.broker.slave_sync import SlaveSync


class _Scripted(SlaveSync):
    """sync_once's outcomes in turn: an exception is raised, a bool returned."""

    def __init__(self, outcomes: list[BaseException | bool]) -> None:
        super().__init__(None, lambda: None, period_s=0, first_delay_s=0, ssl_context=None)  # type: ignore[arg-type]
        self.outcomes = outcomes
        self.done = asyncio.Event()

    async def sync_once(self) -> bool:
        outcome = self.outcomes.pop(0)
        if not self.outcomes:
            self.done.set()
            await asyncio.Event().wait()  # the last one: stay here until closed
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


async def _run(outcomes: list[BaseException | bool]) -> None:
    sync = _Scripted(outcomes)
    sync.start()
    try:
        async with asyncio.timeout(10):
            await sync.done.wait()
    finally:
        await sync.close()


def _goes_on(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "goes on" in r.getMessage()]


def test_no_master_does_not_end_the_failure_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.broker.slave_sync")
    asyncio.run(_run([OSError("cannot connect to 127.0.0.1:40110: [Errno 111] Connection refused"), False, False,
                      "end"]))  # type: ignore[list-item]
    assert _goes_on(caplog) == []


def test_a_round_that_reached_the_master_ends_the_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.broker.slave_sync")
    asyncio.run(_run([OSError("refused"), False, OSError("refused"), True, "end"]))  # type: ignore[list-item]
    assert _goes_on(caplog) == ["slave sync with the master goes on after 2 failed round(s)"]
