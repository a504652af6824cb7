"""``rocketstore serve`` with its store on a small real file system (a tmpfs mounted for the test) that fills
up: sends are refused with SERVICE_NOT_AVAILABLE (4.9.3's SendMessageProcessor answer for a full disk), the
broker stays up, takes sends again once space is freed, and after a kill -9 on the full disk, space freed
and a restart, every acknowledged message is read back."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rocketstore.remoting.codes import ResponseCode

from .hunt17_diskfull_fs import fill, small_fs

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

from local_cluster import pull_all  # noqa: E402
from serve_process import ServeProcess, free_port, write_broker_conf  # noqa: E402

from rocketstore.client import Producer  # noqa: E402
from rocketstore.client.admin import AdminClient  # noqa: E402
from rocketstore.client.errors import BrokerError  # noqa: E402
from rocketstore.remoting.transport import run  # noqa: E402

TOPIC = "DiskFull"


def _send(namesrv: str, acked: list[bytes], refused: list[int], *, count: int, until_refused: bool) -> None:
    """Send up to *count* 1 KB messages, recording each acknowledged body and each refusal's code."""
    async def go() -> None:
        async with Producer(namesrv, "hunt17-diskfull") as producer:
            for i in range(count):
                body = f"m{len(acked)}-{len(refused)}-{i}".encode().ljust(1000, b".")
                try:
                    await producer.send(TOPIC, body, keys=f"k{len(acked)}")
                except BrokerError as exc:
                    refused.append(exc.code)
                    if until_refused:
                        return
                else:
                    acked.append(body)

    run(go())


def test_a_broker_on_a_full_disk_refuses_sends_and_loses_nothing_acknowledged_across_a_kill_9(
        tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf", mapped_file_size_commit_log=1 << 20,
                             mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=100, max_index_num=400,
                             clean_resource_interval=500)
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    with small_fs(tmp_path, "8m") as mnt:
        serve = ServeProcess(mnt / "store", conf, **ports).start()
        try:
            async def create() -> None:
                async with AdminClient(serve.namesrv_addr) as admin:
                    await admin.create_topic(TOPIC, broker_addr=serve.broker_addr, read_queue_nums=1,
                                             write_queue_nums=1)

            run(create())
            acked: list[bytes] = []
            refused: list[int] = []
            _send(serve.namesrv_addr, acked, refused, count=5, until_refused=True)
            assert len(acked) == 5 and not refused

            scratch = fill(mnt)
            _send(serve.namesrv_addr, acked, refused, count=3000, until_refused=True)
            assert refused == [ResponseCode.SERVICE_NOT_AVAILABLE]
            _send(serve.namesrv_addr, acked, refused, count=3, until_refused=False)
            assert refused[1:] == [ResponseCode.SERVICE_NOT_AVAILABLE] * 3
            assert serve.proc is not None and serve.proc.poll() is None

            # space freed: sends are taken again without a restart (the disk check runs every 500 ms here)
            scratch.unlink()
            before = len(acked)
            deadline = time.monotonic() + 30
            while len(acked) == before:
                assert time.monotonic() < deadline, "sends still refused after space was freed"
                _send(serve.namesrv_addr, acked, refused, count=1, until_refused=False)
                time.sleep(0.2)

            scratch = fill(mnt)
            refused.clear()
            _send(serve.namesrv_addr, acked, refused, count=3000, until_refused=True)
            assert refused == [ResponseCode.SERVICE_NOT_AVAILABLE]
            serve.kill()  # kill -9 on the full disk
            scratch.unlink()
            serve = ServeProcess(mnt / "store", conf, **ports).start()
            bodies = [m.body for m in pull_all(serve.namesrv_addr, TOPIC, expected=len(acked))]
            assert bodies == acked
            refused.clear()
            _send(serve.namesrv_addr, acked, refused, count=3, until_refused=False)
            assert not refused
        finally:
            serve.kill()
