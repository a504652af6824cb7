"""A send (single or batch) in unit mode (the header's unitMode, ``k`` in SEND_MESSAGE_V2) to a topic the
broker does not have creates it with 4.9.3's topicSysFlag (AbstractSendMessageProcessor.msgCheck with
TopicSysFlag.buildSysFlag): a ``%RETRY%`` topic as a unit-sub one (FLAG_UNIT_SUB, 2), any other as a unit
one (FLAG_UNIT, 1); without unit mode 0.  A ``%RETRY%`` topic was created with 1, as a unit topic.  Raw
frames against a running broker; the flag is read back from the broker's topic table and topics.json."""

from __future__ import annotations

import json

from local_cluster import LocalCluster
from raw_frames import RawConnection
from test_bad_input import send_ext

from rocketstore.message.batch import BatchEntry, encode_batch
from rocketstore.message.properties import encode_properties
from rocketstore.remoting import RequestCode, ResponseCode


def _persisted_sys_flags(cluster: LocalCluster) -> dict[str, int]:
    def read() -> dict[str, int]:
        cluster.broker.topics.persist()
        with open(cluster.broker.topics.path, encoding="utf-8") as f:
            table = json.load(f)["topicConfigTable"]
        return {name: tc["topicSysFlag"] for name, tc in table.items()}

    return cluster.call(read)


def test_unit_mode_sends_create_topics_with_4_9_3_sys_flags(cluster: LocalCluster,
                                                            conn: RawConnection) -> None:
    props = encode_properties({"WAIT": "true"})
    sends = [
        ("%RETRY%hunt23-unit-group", "true", False),
        ("%RETRY%hunt23-unit-batch", "true", True),
        ("Hunt23UnitTopic", "true", False),
        ("Hunt23UnitBatchTopic", "true", True),
        ("%RETRY%hunt23-plain-group", "false", False),
    ]
    for topic, unit, batch in sends:
        if batch:
            answer = conn.request(RequestCode.SEND_BATCH_MESSAGE, send_ext(topic, i=props, k=unit, m="true"),
                                  encode_batch([BatchEntry(b"one", "TAGS\x01t"), BatchEntry(b"two", "")]))
        else:
            answer = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(topic, i=props, k=unit), b"body")
        assert answer.code == ResponseCode.SUCCESS, (topic, answer.remark)
    expected = {"%RETRY%hunt23-unit-group": 2, "%RETRY%hunt23-unit-batch": 2, "Hunt23UnitTopic": 1,
                "Hunt23UnitBatchTopic": 1, "%RETRY%hunt23-plain-group": 0}
    configs = cluster.call(lambda: {t: cluster.broker.topics.get(t) for t in expected})
    live = {t: tc.topic_sys_flag if tc is not None else None for t, tc in configs.items()}
    assert live == expected
    persisted = _persisted_sys_flags(cluster)
    assert {t: persisted[t] for t in expected} == expected
