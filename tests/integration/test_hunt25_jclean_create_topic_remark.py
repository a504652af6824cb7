"""UPDATE_AND_CREATE_TOPIC's SUCCESS answer carries the remark 4.9.3 leaves on it.

The same request went to the real 4.9.3 broker and to ours: 4.9.3's AdminBrokerProcessor.updateAndCreateTopic
sets only the code of a response made by createResponseCommand, so its SUCCESS keeps the remark every new
response starts with, "not set any response code"; ours answered without a remark."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, run_within

from rocketstore.remoting import RemotingCommand, RequestCode
from rocketstore.remoting.transport import connect

TEST_TIMEOUT_S = 60.0

# captured from 4.9.3: (code, remark) of UPDATE_AND_CREATE_TOPIC creating TopicA (1 queue, perm 6)
JAVA_CREATE_ANSWER = (0, "not set any response code")


def test_create_topic_answer_keeps_4_9_3_remark(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> RemotingCommand:
            conn = await connect(cluster.broker_addr)
            try:
                ext = {"topic": "TopicA", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
                       "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
                return await conn.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext), 10)
            finally:
                conn.close()

        answer = run_within(go, TEST_TIMEOUT_S)
    assert (answer.code, answer.remark) == JAVA_CREATE_ANSWER
