"""A broker's plain ACL at run time, as RocketMQ 4.9.3 has it:

* the ACL files are watched by a thread of their own (4.9.3's AclFileWatchService): an edit takes effect on a
  broker no request reaches, also one that keeps the file's size and timestamp; the thread ends with the
  broker;
* ACL is set up at start only (BrokerController.initialAcl): aclEnable set true by UPDATE_BROKER_CONFIG
  checks no request and gives the ACL admin requests nothing to work on, until the next start."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from local_cluster import ACL_APP as APP
from local_cluster import LocalCluster, acl_home, run_within
from local_cluster import acl_send_status as _send
from local_cluster import edited_topic_acl as acl_text

from rocketstore.broker.acl import PUB, SUB
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.codes import ResponseCode


def _watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "AclFileWatch"]


def test_an_idle_broker_loads_an_edit_that_keeps_size_and_mtime(tmp_path: Path) -> None:
    home = acl_home(tmp_path / "home", acl_text("PUB"))
    path = home / "conf" / "plain_acl.yml"
    watches = len(_watch_threads())  # another test's broker may still be closing
    with LocalCluster(tmp_path / "store", acl_enable=True, rocketmq_home=str(home)) as cluster:
        acl = cluster.broker.acl
        assert acl is not None and acl._watch in _watch_threads()

        def edited_topic_perm() -> int:
            perms = acl.config.accounts[APP.access_key].perms
            assert perms is not None
            return perms["EditedTopic"]

        assert edited_topic_perm() == PUB
        before = path.stat()
        path.write_text(acl_text("SUB"), encoding="utf-8")  # as long as the PUB text
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        # no request reaches the broker meanwhile: only its watch can have read the file
        cluster.wait_until(lambda: edited_topic_perm() == SUB, 30, "the watch to load the edit")

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "acl-producer", credentials=APP, retry_times=0) as app:
                assert await _send(app) == "No default permission for topic:EditedTopic"

        run_within(go, 30)
        watch = acl._watch
    assert watch is not None and not watch.is_alive()  # ended with the broker
    assert len(_watch_threads()) <= watches


def test_acl_enable_set_true_at_runtime_waits_for_the_next_start(tmp_path: Path) -> None:
    home = acl_home(tmp_path / "home", acl_text("DENY"))
    with LocalCluster(tmp_path / "store", rocketmq_home=str(home)) as cluster:
        assert cluster.broker.acl is None

        async def go() -> None:
            async with AdminClient(cluster.namesrv_addr, timeout_s=5.0) as admin:
                await admin.update_broker_config({"aclEnable": "true"}, broker_addr=cluster.broker_addr)
                shown, _ = await admin.broker_config(cluster.broker_addr)
                assert shown["aclEnable"] == "true"
                with pytest.raises(BrokerError) as update:
                    await admin.update_acl_config(cluster.broker_addr, "rocketstore-new", "s3cret-key-3")
                with pytest.raises(BrokerError) as info:
                    await admin.acl_config_version(cluster.broker_addr)
            assert update.value.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
            assert info.value.code == ResponseCode.SYSTEM_ERROR
            for error in (update, info):
                assert "aclEnable was false when it started" in str(error.value.remark)
                assert "aclEnable is false" not in str(error.value.remark)  # it is true by now
            async with Producer(cluster.namesrv_addr, "acl-unsigned", retry_times=0) as unsigned:
                assert await _send(unsigned) == "SEND_OK"  # nothing is checked until a restart

        run_within(go, 30)
