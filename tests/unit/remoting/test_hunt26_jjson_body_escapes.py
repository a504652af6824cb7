"""Bodies written without fastjson.dumps escape strings as 4.9.3's fastjson does (DEL, C1 controls, U+2028/9
as upper-case ``\\u`` escapes, non-ASCII text raw).  Expected bodies captured from 4.9.3's
TopicRouteData.encode() and GetConsumerStatusBody.encode()."""

from __future__ import annotations

from rocketstore.remoting.bodies import BrokerData, QueueData, TopicRouteData
from rocketstore.remoting.consumer_bodies import GetConsumerStatusBody

# captured from 4.9.3: broker "b\u2029" of cluster "c\u007f" at {0: 1.2.3.4:10911}, a queue data of it
# (4/4/6/0), orderTopicConf "b\u00e9:4\u2028", an empty filterServerTable
JAVA_ROUTE = (b'{"brokerDatas":[{"brokerAddrs":{0:"1.2.3.4:10911"},"brokerName":"b\\u2029","cluster":"c\\u007F"}],'
              b'"filterServerTable":{},"orderTopicConf":"b\xc3\xa9:4\\u2028","queueDatas":[{"brokerName":"b\\u2029",'
              b'"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}')
# captured from 4.9.3: consumerTable {"c\u0085": {MessageQueue("T\u001f", "b", 1): 5}}, messageQueueTable {}
JAVA_CONSUMER_STATUS = (b'{"consumerTable":{"c\\u0085":{{"brokerName":"b","queueId":1,"topic":"T\\u001F"}:5}},'
                        b'"messageQueueTable":{}}')


def test_route_data_escapes_as_fastjson():
    route = TopicRouteData(queue_datas=(QueueData("b\u2029", 4, 4, 6, 0),),
                           broker_datas=(BrokerData("c\x7f", "b\u2029", {0: "1.2.3.4:10911"}),),
                           order_topic_conf="b\u00e9:4\u2028")
    assert route.encode() == JAVA_ROUTE


def test_route_data_with_a_lone_surrogate_is_encoded():
    route = TopicRouteData(queue_datas=(), broker_datas=(), order_topic_conf="x\ud800")
    assert b'"orderTopicConf":"x?"' in route.encode()  # as Java's getBytes(UTF_8): '?'


def test_consumer_status_body_escapes_as_fastjson():
    body = GetConsumerStatusBody(consumer_table={"c\x85": {("T\x1f", "b", 1): 5}})
    assert body.encode() == JAVA_CONSUMER_STATUS
