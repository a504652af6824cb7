"""SYNC_MASTER sends waiting for a slave's acknowledgement (HAServer.wait_replicated) against a real store,
with a slave that is connected but acknowledges nothing: each send times out, and the waiters it leaves
behind do not pile up for as long as the slave stays silent."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketstore.broker import ha
from rocketstore.broker.ha import HAServer
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus


def test_timed_out_waiters_of_a_silent_slave_are_dropped(tmp_path: Path) -> None:
    async def go() -> tuple[list[PutMessageStatus], int, PutMessageStatus]:
        with MessageStore.open(tmp_path / "store", StoreConfig(mapped_file_size_commit_log=1 << 20)) as store:
            server = HAServer(store, "127.0.0.1", 0)
            server.slaves.add(ha._Slave("silent"))
            answers = [await server.wait_replicated(1000 + i, 0) for i in range(2 * ha._WAITERS_PRUNE_AT)]
            left = len(server._waiters)
            # a slave that acknowledges again still releases a send waiting now
            waiting = asyncio.ensure_future(server.wait_replicated(5000, 10))
            await asyncio.sleep(0)
            server._acked(5000)
            return answers, left, await waiting

    answers, left, late = asyncio.run(go())
    assert set(answers) == {PutMessageStatus.FLUSH_SLAVE_TIMEOUT}
    assert left <= ha._WAITERS_PRUNE_AT + 1
    assert late is PutMessageStatus.PUT_OK
