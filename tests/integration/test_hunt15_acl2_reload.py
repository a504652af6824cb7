"""Plain ACL files edited by hand while the broker runs, seen by real clients (rocketstore's Python producer
and the official C++ client, PyPI ``rocketmq`` 0.4.4), as RocketMQ 4.9.3's watched files behave: an edit
takes effect without a restart; a file 4.9.3 would not load (bad YAML, a scalar where the white list
belongs, bytes that are not UTF-8) is logged and leaves the last good permissions in force, and no request
fails because of it.  Also: non-ASCII tags, keys and properties signed by the C++ client check out, and
aclEnable changed by UPDATE_BROKER_CONFIG waits for the next start, as in 4.9.3."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from cpp_driver import SKIP_REASON, Runner, messages
from local_cluster import ACL_ADMIN as ADMIN
from local_cluster import ACL_APP as APP
from local_cluster import LocalCluster, acl_home, edited_topic_acl, run_within
from local_cluster import acl_send_status as _send

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient


def acl_text(perm: str, white: str = "globalWhiteRemoteAddresses:\n  - 10.10.103.*\n") -> str:
    return edited_topic_acl(perm, white)


async def _until(fn: Callable[[], Awaitable[str]], want: str, timeout_s: float = 10.0) -> None:
    """Poll *fn* until it answers *want* (the broker looks at its files at most once a second)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = await fn()
        if got == want:
            return
        assert time.monotonic() < deadline, f"still {got!r}, waiting for {want!r}"
        await asyncio.sleep(0.05)


def test_hand_edits_take_effect_and_files_rocketmq_refuses_keep_the_last_good(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rocketstore.broker.acl")
    home = acl_home(tmp_path / "home", acl_text("DENY"))
    path = home / "conf" / "plain_acl.yml"

    def refused_loads() -> int:
        return sum("did not load, the previous configuration stays" in r.getMessage() for r in caplog.records)

    async def through_the_broken(producer: Producer, data: bytes) -> None:
        """Write *data*; send until the broker has logged that it did not load, every send answered as the
        last good file says."""
        before = refused_loads()
        path.write_bytes(data)
        deadline = time.monotonic() + 10
        while refused_loads() == before:
            assert await _send(producer) == "SEND_OK"  # never an error from reading the broken file
            assert time.monotonic() < deadline, "the broker never refused the broken file"
            await asyncio.sleep(0.05)
        assert await _send(producer) == "SEND_OK"

    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "acl-producer", credentials=APP, retry_times=0) as signed, \
                    Producer(cluster.namesrv_addr, "acl-unsigned", retry_times=0) as unsigned:
                assert await _send(signed) == "No default permission for topic:EditedTopic"
                path.write_text(acl_text("PUB"), encoding="utf-8")
                await _until(lambda: _send(signed), "SEND_OK")

                await through_the_broken(signed, b"accounts: [ {")
                # a scalar, not a list: read as characters it would have made '*' a white pattern
                await through_the_broken(signed, acl_text("DENY", "globalWhiteRemoteAddresses: 127.0.0.*\n").encode())
                assert await _send(unsigned) == "No accessKey is configured"
                await through_the_broken(signed, "# caf\u00e9\n".encode("latin-1") + acl_text("DENY").encode())

                path.write_text(acl_text("SUB"), encoding="utf-8")  # good again: takes effect
                await _until(lambda: _send(signed), "No default permission for topic:EditedTopic")
                assert await _send(unsigned) == "No accessKey is configured"

        run_within(go, 40)


def test_acl_enable_changed_at_runtime_waits_for_the_next_start(tmp_path: Path) -> None:
    home = acl_home(tmp_path / "home", acl_text("PUB"))
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        async def go() -> None:
            async with AdminClient(cluster.namesrv_addr, credentials=ADMIN) as admin:
                await admin.update_broker_config({"aclEnable": "false"}, broker_addr=cluster.broker.address)
                shown, _ = await admin.broker_config(cluster.broker.address)
                assert shown["aclEnable"] == "false"
            async with Producer(cluster.namesrv_addr, "acl-unsigned", retry_times=0) as unsigned:
                assert await _send(unsigned) == "No accessKey is configured"  # still checked until a restart

        run_within(go, 20)


@pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
def test_cpp_client_signs_non_ascii_tags_keys_and_properties_as_the_broker_checks_them(tmp_path: Path) -> None:
    home = acl_home(tmp_path / "home", acl_text("PUB|SUB"))
    env = {"RMQ_ACCESS_KEY": APP.access_key, "RMQ_SECRET_KEY": APP.secret_key}
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        producer = Runner(["produce", cluster.namesrv_addr, "EditedTopic", "生产者组", "3", "--tags", "标签",
                           "--prop", "KEYS=键-{i}", "--prop", "描述=值 {i} ünï"], tmp_path, env)
        try:
            producer.collect_until(lambda seen: any(s.get("done") for s in seen), 40, "the C++ producer")
        finally:
            producer.kill()
        assert [s["status"] for s in producer.seen if "i" in s] == ["OK"] * 3
        consumer = Runner(["consume", cluster.namesrv_addr, "EditedTopic", "acl-group", "标签", "--props",
                           "KEYS,描述"], tmp_path, env)
        try:
            consumer.collect_until(lambda seen: len(messages(seen)) >= 3, 40, "three pushed messages")
        finally:
            consumer.stop()
        got = sorted((m["tags"], m["props"]["KEYS"], m["props"]["描述"]) for m in messages(consumer.seen))
        assert got == [("标签", f"键-{i}", f"值 {i} ünï") for i in range(3)]
