"""DELETE_SUBSCRIPTIONGROUP (207) and QUERY_TOPIC_CONSUME_BY_WHO (300) without their required header field.

4.9.3 decodes both with a header class whose field is @CFNotNull (DeleteSubscriptionGroupRequestHeader.groupName,
QueryTopicConsumeByWhoRequestHeader.topic): a request without it is a RemotingCommandException naming the
field, answered SYSTEM_ERROR, and nothing changes.  These two handlers used to read the field ad hoc with ""
as the default and answered SUCCESS (a delete of group "" that deleted nothing; the groups consuming topic "").
With the field present both are served as before.
"""

from __future__ import annotations

from local_cluster import LocalCluster
from raw_frames import RawConnection

from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode, ResponseCode

TOPIC, GROUP = "CodesTopic", "codes-group"


def test_delete_subscription_group_without_group_name_is_refused(cluster: LocalCluster,
                                                                  conn: RawConnection) -> None:
    created = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                           body=fastjson.dumps({"groupName": GROUP, "consumeEnable": True}))
    assert created.code == ResponseCode.SUCCESS, created.remark
    assert cluster.call(lambda: cluster.broker.groups.get(GROUP)) is not None

    refused = conn.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"removeOffset": "true"})
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert "groupName" in (refused.remark or "")
    assert cluster.call(lambda: cluster.broker.groups.get(GROUP)) is not None

    deleted = conn.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": GROUP, "removeOffset": "false"})
    assert deleted.code == ResponseCode.SUCCESS, deleted.remark
    assert cluster.call(lambda: cluster.broker.groups.get(GROUP)) is None


def test_query_topic_consume_by_who_without_topic_is_refused(cluster: LocalCluster, conn: RawConnection) -> None:
    cluster.create_topic(TOPIC)
    committed = conn.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                             {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "commitOffset": "0"})
    assert committed.code == ResponseCode.SUCCESS, committed.remark

    refused = conn.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {})
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert "topic" in (refused.remark or "")

    answered = conn.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": TOPIC})
    assert answered.code == ResponseCode.SUCCESS, answered.remark
    assert fastjson.loads(answered.body) == {"groupList": [GROUP]}
