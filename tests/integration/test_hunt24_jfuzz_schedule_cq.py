"""QUERY_CONSUME_QUEUE (mqadmin queryCq) on SCHEDULE_TOPIC_XXXX of a broker that has delayed nothing yet: a
4.9.3 master's delay timers open the consume queue of every configured level, so an empty level's queue
exists and the answer is SUCCESS "Index 0 of ... is not exist!"; a queue id past the levels stays
SYSTEM_ERROR "... is not exist!".  The answers below were captured from a 4.9.3 broker (18 delay levels) the
same way, a raw QUERY_CONSUME_QUEUE with topic, queueId, index 0 and count 5."""

from __future__ import annotations

from raw_frames import RawConnection

from rocketstore.remoting.codes import RequestCode, ResponseCode

# captured from 4.9.3: queueId -> (response code, remark); no body in any of them
JAVA_493 = {
    "0": (ResponseCode.SUCCESS, "Index 0 of 0@SCHEDULE_TOPIC_XXXX is not exist!"),
    "17": (ResponseCode.SUCCESS, "Index 0 of 17@SCHEDULE_TOPIC_XXXX is not exist!"),
    "18": (ResponseCode.SYSTEM_ERROR, "18@SCHEDULE_TOPIC_XXXX is not exist!"),
    "-1": (ResponseCode.SYSTEM_ERROR, "-1@SCHEDULE_TOPIC_XXXX is not exist!"),
}


def test_empty_delay_level_queues_exist_as_in_4_9_3(conn: RawConnection) -> None:
    for queue_id, (code, remark) in JAVA_493.items():
        r = conn.request(RequestCode.QUERY_CONSUME_QUEUE, {"topic": "SCHEDULE_TOPIC_XXXX", "queueId": queue_id,
                                                           "index": "0", "count": "5"})
        assert (r.code, r.remark, r.body) == (code, remark, b""), queue_id
