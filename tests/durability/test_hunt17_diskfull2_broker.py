"""``rocketstore serve`` whose config directory is on a full disk (a small tmpfs mounted for the test): it
starts, logging which file it could not write; a topic, a subscription group or a consumer offset changed
there is answered SUCCESS (4.9.3's ConfigManager.persist logs the IOException; the table in memory changed),
and once space is freed the files catch up with the tables, so a broker killed -9 after that and restarted
has them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .hunt17_diskfull_fs import fill, small_fs

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

from serve_process import ServeProcess, free_port, wait_for, write_broker_conf  # noqa: E402

from rocketstore.client.admin import AdminClient  # noqa: E402
from rocketstore.remoting.codes import RequestCode, ResponseCode  # noqa: E402
from rocketstore.remoting.command import RemotingCommand  # noqa: E402
from rocketstore.remoting.headers import UpdateConsumerOffsetRequestHeader  # noqa: E402
from rocketstore.remoting.transport import run  # noqa: E402


def _table(path: Path, key: str) -> dict[str, object]:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))[key])
    except (FileNotFoundError, ValueError, KeyError):
        return {}


def test_a_broker_restarted_on_a_full_disk_starts_takes_topics_and_groups_and_writes_them_later(
        tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf", mapped_file_size_commit_log=1 << 20,
                             mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=100, max_index_num=400)
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    with small_fs(tmp_path, "8m") as mnt:
        config_dir = mnt / "store" / "config"
        topics_json, groups_json = config_dir / "topics.json", config_dir / "subscriptionGroup.json"
        offsets_json = config_dir / "consumerOffset.json"

        async def create(serve: ServeProcess, topic: str, group: str) -> None:
            async with AdminClient(serve.namesrv_addr) as admin:
                await admin.create_topic(topic, broker_addr=serve.broker_addr, read_queue_nums=1,
                                         write_queue_nums=1)
                await admin.update_subscription_group(group, broker_addr=serve.broker_addr, retry_max_times=3)
                # an offset commit (in memory; consumerOffset.json is written every flushConsumerOffsetInterval)
                ext = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=0,
                                                        commit_offset=3).to_ext_fields()
                answer = await admin.pool.request(
                    serve.broker_addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext), 10)
                assert answer.code == ResponseCode.SUCCESS, answer.remark

        serve = ServeProcess(mnt / "store", conf, **ports).start()
        try:
            run(create(serve, "BeforeFull", "GroupBeforeFull"))
            assert serve.terminate() == 0
            scratch = fill(mnt)

            # restarted on the full disk: it starts (it exited with "[Errno 28] No space left on device")
            serve = ServeProcess(mnt / "store", conf, **ports).start()
            # both answered SUCCESS (they were SYSTEM_ERROR "OSError: [Errno 28] ...")
            run(create(serve, "OnFull", "GroupOnFull"))
            assert "OnFull" not in _table(topics_json, "topicConfigTable")

            # space back: the files catch up without another change and without a shutdown
            scratch.unlink()
            wait_for(lambda: "OnFull" in _table(topics_json, "topicConfigTable"), 30, "topics.json written")
            wait_for(lambda: "GroupOnFull" in _table(groups_json, "subscriptionGroupTable"), 30,
                     "subscriptionGroup.json written")
            wait_for(lambda: _table(offsets_json, "offsetTable").get("OnFull@GroupOnFull") == {"0": 3}, 30,
                     "consumerOffset.json written")
            serve.kill()
            log = serve.stderr_tail()
            assert "topics.json" in log and "No space left on device" in log
            assert "Traceback" not in log

            serve = ServeProcess(mnt / "store", conf, **ports).start()

            async def listed() -> tuple[list[str], dict[str, object]]:
                async with AdminClient(serve.namesrv_addr) as admin:
                    return await admin.topic_list(), _table(groups_json, "subscriptionGroupTable")

            topics, groups = run(listed())
            assert {"BeforeFull", "OnFull"} <= set(topics)
            assert {"GroupBeforeFull", "GroupOnFull"} <= set(groups)
            assert serve.terminate() == 0
            assert _table(offsets_json, "offsetTable").get("OnFull@GroupOnFull") == {"0": 3}
        finally:
            serve.kill()
