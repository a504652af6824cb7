"""A send's WAIT property as 4.9.3's broker reads it (MessageExt.isWaitStoreMsgOK): no WAIT waits for the
disk, else Boolean.parseBoolean of the value, so "TRUE" waits and "yes", "1", " true" do not; an empty value
is dropped with the properties string's other empty pairs (string2messageProperties), so it waits.  Raw
SEND_MESSAGE_V2 frames on a SYNC_FLUSH broker whose disk is stalled: a send that waits is answered
FLUSH_DISK_TIMEOUT, one that does not is answered SUCCESS."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from raw_frames import RawConnection
from test_sync_flush_broker import DiskGate, _cluster, gate  # noqa: F401 - gate: the fixture, reused

from rocketstore.client import Producer
from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.remoting.codes import RequestCode, ResponseCode

TOPIC = "Hunt17WaitTopic"
# WAIT's value (None: no WAIT) -> whether 4.9.3 waits for the disk before it answers
CASES: dict[str | None, bool] = {None: True, "true": True, "TRUE": True, "True": True, "": True,
                                 "false": False, "FALSE": False, "yes": False, "1": False, " true": False}


def _properties(i: int, wait: str | None) -> str:
    text = f"UNIQ_KEY\x01HUNT17WAIT{i:04d}\x02TAGS\x01t"
    return text if wait is None else f"{text}\x02WAIT\x01{wait}"


def test_the_broker_reads_wait_as_java_boolean_parse_boolean(
        tmp_path: Path, gate: DiskGate) -> None:  # noqa: F811
    with _cluster(tmp_path, sync_flush_timeout_ms=300) as cluster:
        async def warm() -> None:
            async with Producer(cluster.namesrv_addr, "hunt17-wait-pg", timeout_s=30) as producer:
                assert (await producer.send(TOPIC, b"warm")).status == "SEND_OK"

        cluster.run(asyncio.wait_for(warm(), 30), 40)
        gate.open.clear()  # the disk stalls: a send that waits for it gets FLUSH_DISK_TIMEOUT
        conn = RawConnection(cluster.broker_addr)
        try:
            codes, batch_codes = {}, {}
            for i, wait in enumerate(CASES):
                ext = {"a": "hunt17-wait-pg", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0",
                       "g": str(int(time.time() * 1000)), "h": "0", "i": _properties(i, wait), "j": "0",
                       "k": "false", "m": "false"}
                codes[wait] = conn.request(RequestCode.SEND_MESSAGE_V2, ext, f"m{i}".encode()).code
                # a batch: its own WAIT is the header's properties' (MessageExtBatch.isWaitStoreMsgOK)
                ext["i"] = "" if wait is None else f"WAIT\x01{wait}"
                ext["m"] = "true"
                body = encode_batch([BatchEntry(f"b{i}".encode(), f"UNIQ_KEY\x01HUNT17WAITB{i:04d}")])
                batch_codes[wait] = conn.request(RequestCode.SEND_BATCH_MESSAGE, ext, body).code
        finally:
            conn.close()
            gate.open.set()
        expected = {wait: ResponseCode.FLUSH_DISK_TIMEOUT if waits else ResponseCode.SUCCESS
                    for wait, waits in CASES.items()}
        assert codes == expected
        assert batch_codes == expected
