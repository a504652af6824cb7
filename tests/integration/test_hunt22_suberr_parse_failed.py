"""A pull's own subscription (the subscription flag) that 4.9.3's FilterAPI.build throws for is answered
SUBSCRIPTION_PARSE_FAILED, as PullMessageProcessor does, before any read.  A TAG expression of ``||`` pairs
only (``||``, ``||||``) splits into no piece in Java ("subString split error"); it used to be taken as a
subscription naming no tag: NO_MATCHED_MESSAGE where the queue had messages, and a held (long-polled) pull
answered PULL_NOT_FOUND where it had none, so the consumer waited without a word.  `` || `` builds in Java
(blank pieces) and matches nothing.  A blank SQL92 expression builds in Java too (only an empty one throws),
so a broker without enablePropertyFilter answers it as any SQL92 subscription (SYSTEM_ERROR), where it used
to be refused as empty."""

from __future__ import annotations

from local_cluster import LocalCluster, send_bodies
from raw_frames import RawConnection

from rocketstore.broker.pull import PullSysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader

TOPIC = "SubErrTopic"
GROUP = "suberr-group"
PARSE_FAILED = (ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")


def _pull(conn: RawConnection, expression: str, expression_type: str = "TAG", *,
          suspend: bool = False) -> RemotingCommand:
    sys_flag = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend else 0)
    header = PullMessageRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0, queue_offset=0,
                                      max_msg_nums=32, sys_flag=sys_flag, commit_offset=0,
                                      suspend_timeout_ms=1000, subscription=expression, sub_version=0,
                                      expression_type=expression_type)
    return conn.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def test_a_tag_expression_of_separators_only_is_a_parse_failure(cluster: LocalCluster,
                                                                 conn: RawConnection) -> None:
    cluster.create_topic(TOPIC, 1)
    send_bodies(cluster, TOPIC, ["a", "b"])
    cluster.wait_dispatched()
    answers = {e: _pull(conn, e) for e in ("||", "||||", " || ")}
    assert (answers["||"].code, answers["||"].remark) == PARSE_FAILED
    assert (answers["||||"].code, answers["||||"].remark) == PARSE_FAILED
    # blank pieces: 4.9.3 builds a subscription naming no tag, which matches none of the messages
    assert (answers[" || "].code, answers[" || "].remark) == (ResponseCode.PULL_RETRY_IMMEDIATELY,
                                                              "NO_MATCHED_MESSAGE")


def test_a_held_pull_of_separators_only_is_refused_not_held(cluster: LocalCluster, conn: RawConnection) -> None:
    cluster.create_topic(TOPIC, 1)
    answer = _pull(conn, "||", suspend=True)
    assert (answer.code, answer.remark) == PARSE_FAILED


def test_a_blank_sql92_expression_without_property_filter_is_not_supported(cluster: LocalCluster,
                                                                            conn: RawConnection) -> None:
    cluster.create_topic(TOPIC, 1)
    blank = _pull(conn, "  ", "SQL92")
    assert (blank.code, blank.remark) == (ResponseCode.SYSTEM_ERROR,
                                          "The broker does not support consumer to filter message by SQL92")
    empty = _pull(conn, "", "SQL92")
    assert (empty.code, empty.remark) == PARSE_FAILED
