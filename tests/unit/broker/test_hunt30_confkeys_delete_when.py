"""deleteWhen with a part that is no hour of the day ("4am", "25"): the broker started without a word and
never deleted expired files at that hour.  4.9.3 reads each part with Integer.parseInt at every clean-up
pass (a part that is no number fails the pass, its store.log repeating the exception every 10 s; a number
that is no hour never matches).  Now the start warns, naming deleteWhen and the parts."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rocketstore import StoreConfig
from rocketstore.broker import Broker, BrokerConfig


def _start_and_close(root: Path, delete_when: str) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1"),
                        StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20,
                                    delete_when=delete_when))
        await broker.start()
        await broker.close()
    asyncio.run(main())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.getMessage().startswith("deleteWhen=")]


@pytest.mark.parametrize("delete_when, named", [("4am", ["'4am'"]), ("25", ["'25'"]),
                                                ("04;4pm", ["'4pm'"])])
def test_a_delete_when_that_is_no_hour_is_named_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                         delete_when: str, named: list[str]) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.broker")
    _start_and_close(tmp_path, delete_when)
    [warning] = _warnings(caplog)
    assert warning.startswith(f"deleteWhen={delete_when}:")
    assert all(part in warning for part in named)
    if ";" in delete_when:
        assert "only at the other hours" in warning
    else:
        assert "not deleted for their age" in warning


# "04;": Java's String.split drops the trailing empty part (4.9.3 deletes at 04), and so does the store's rule
@pytest.mark.parametrize("delete_when", ["04", "04;16", " 4 ; 23", "0", "04;"])
def test_hours_start_quietly(tmp_path: Path, caplog: pytest.LogCaptureFixture, delete_when: str) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.broker")
    _start_and_close(tmp_path, delete_when)
    assert _warnings(caplog) == []
