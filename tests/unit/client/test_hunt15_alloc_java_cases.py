"""The allocation strategies give exactly what RocketMQ 4.9.3's own classes give.

``data/hunt15_alloc_java_cases.jsonl`` was computed by 4.9.3's AllocateMessageQueueAveragely,
AllocateMessageQueueAveragelyByCircle, AllocateMessageQueueConsistentHash (default MD5 ring; 10, 0, 1 and a
random number of virtual nodes), AllocateMessageQueueByMachineRoom and AllocateMachineRoomNearby (around
the first three) -- compiled from the rocketmq-all-4.9.3 sources with javac (Java 17, commons-lang3, a
no-op logger) -- driven by ``data/AllocCasesGen.java``:

    java -Dfile.encoding=UTF-8 AllocCasesGen 130 15;  java -Dfile.encoding=UTF-8 AllocCasesGen 20 16 u

(150 cases: random topics, 1-4 brokers some named ``IDCn@broker-x``, 1-16 queues each, 1-20 sorted client
ids; the last 20 with non-ASCII topics and client ids, which the ring hashes as UTF-8).  Each line holds
the sorted queues, the sorted client ids and, per strategy, the queue indices each client id gets, in
Java's order.  The nearby cases resolve a broker's room as the text before the first ``@`` of its name
and a client's as that of its id, upper-cased.  While writing the strategies they were also checked
against 3 300 more cases of the same generator (33 000 allocations, all equal).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketstore.client.allocate import (
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    allocate_averagely,
    allocate_averagely_by_circle,
    md5_hash,
    queue_key,
    strategy_name,
)
from rocketstore.client.lite_pull_consumer import LitePullConsumer
from rocketstore.client.push_consumer import PushConsumer
from rocketstore.client.push_types import ConsumedMessage, ConsumeStatus
from rocketstore.client.route import MessageQueue

CASES = [json.loads(line) for line in
         (Path(__file__).parent / "data" / "hunt15_alloc_java_cases.jsonl").read_text("utf-8").splitlines()]


def _room(name: str) -> str:
    return name.split("@")[0]


def _strategies(case: dict[str, Any]) -> dict[str, AllocateStrategy]:
    def nearby(inner: AllocateStrategy) -> AllocateStrategy:
        return AllocateMachineRoomNearby(inner, lambda mq: _room(mq.broker_name), lambda cid: _room(cid).upper())

    return {
        "averagely": allocate_averagely, "circle": allocate_averagely_by_circle,
        "hash": AllocateConsistentHash(), "hash0": AllocateConsistentHash(0), "hash1": AllocateConsistentHash(1),
        "hashN": AllocateConsistentHash(case["virtual_nodes"]), "room": AllocateByMachineRoom(case["idcs"]),
        "nearby_averagely": nearby(allocate_averagely), "nearby_circle": nearby(allocate_averagely_by_circle),
        "nearby_hash": nearby(AllocateConsistentHash()),
    }


def test_the_fixture_covers_every_strategy_and_shape() -> None:
    assert len(CASES) == 150
    assert {len(c["cids"]) for c in CASES} >= {1, 2, 8}
    assert max(len(c["cids"]) for c in CASES) > 8 and max(len(c["queues"]) for c in CASES) > 30
    assert any("@" in b for c in CASES for b, _ in c["queues"]) and any(
        "@" not in b for c in CASES for b, _ in c["queues"])
    assert any(not c["topic"].isascii() for c in CASES)
    for name in ("averagely", "circle", "hash", "hashN", "room", "nearby_averagely", "nearby_circle", "nearby_hash"):
        assert any(any(share) for c in CASES for share in c["results"][name]), name


@pytest.mark.parametrize("index", range(len(CASES)))
def test_equal_to_rocketmq_4_9_3(index: int) -> None:
    case = CASES[index]
    queues = [MessageQueue(case["topic"], broker, queue_id) for broker, queue_id in case["queues"]]
    client_ids = case["cids"]
    assert queues == sorted(queues) and client_ids == sorted(client_ids)  # sorted as Java sorts them
    for name, strategy in _strategies(case).items():
        got = [[queues.index(mq) for mq in strategy(cid, queues, client_ids)] for cid in client_ids]
        assert got == case["results"][name], (name, case)


def test_the_ring_hash_and_key_are_java_s() -> None:
    # the first four MD5 bytes, big-endian unsigned: md5("a") = 0cc175b9...
    assert md5_hash("a") == 0x0CC175B9
    assert queue_key(MessageQueue("T", "b", 3)) == "MessageQueue [topic=T, brokerName=b, queueId=3]"


def test_shares_of_a_non_member_and_bad_arguments() -> None:
    queues = [MessageQueue("T", "b", i) for i in range(4)]
    for strategy in (allocate_averagely_by_circle, AllocateConsistentHash(), AllocateByMachineRoom(["IDC1"]),
                     AllocateMachineRoomNearby(allocate_averagely, lambda mq: "r", lambda cid: "r")):
        assert strategy("x", queues, ["a", "b"]) == []
        assert strategy("a", [], ["a"]) == []
        with pytest.raises(ValueError):
            strategy("", queues, ["a"])
    with pytest.raises(ValueError):
        AllocateConsistentHash(-1)
    with pytest.raises(ValueError, match="machine room"):
        AllocateMachineRoomNearby(allocate_averagely, lambda mq: "", lambda cid: "r")("a", queues, ["a"])
    with pytest.raises(ValueError, match="machine room"):
        AllocateMachineRoomNearby(allocate_averagely, lambda mq: "r", lambda cid: "")("a", queues, ["a"])


def test_by_config_gives_its_list_to_anyone() -> None:
    fixed = [MessageQueue("T", "b", 2), MessageQueue("U", "b", 0)]
    strategy = AllocateByConfig(fixed)
    assert strategy("a", [MessageQueue("T", "b", 0)], ["a", "b"]) == fixed
    assert strategy("z", [], []) == fixed


def test_machine_room_takes_the_rest_from_the_end_and_splits_names_as_java() -> None:
    queues = [MessageQueue("T", f"IDC1@b{i}", 0) for i in range(4)] + [
        MessageQueue("T", "IDC1@x@", 0),   # Java's split drops the trailing empty part: ["IDC1", "x"]
        MessageQueue("T", "IDC1@x@y", 0),  # three parts: not a room queue
        MessageQueue("T", "IDC2@b", 0),    # room not listed
        MessageQueue("T", "b", 0)]         # no room
    strategy = AllocateByMachineRoom({"IDC1"})
    # 5 room queues among 2 members: 2 each from the front, the 5th to the first member
    assert strategy("a", queues, ["a", "b"]) == [queues[0], queues[1], queues[4]]
    assert strategy("b", queues, ["a", "b"]) == [queues[2], queues[3]]
    assert strategy_name(strategy) == "MACHINE_ROOM"


def test_consistent_hash_moves_few_queues_when_a_member_joins() -> None:
    queues = [MessageQueue("T", "b", i) for i in range(64)]
    strategy = AllocateConsistentHash()
    before = {mq: cid for cid in ["c1", "c2", "c3"] for mq in strategy(cid, queues, ["c1", "c2", "c3"])}
    after = {mq: cid for cid in ["c1", "c2", "c3", "c4"] for mq in strategy(cid, queues, ["c1", "c2", "c3", "c4"])}
    assert set(before) == set(after) == set(queues)
    assert all(after[mq] in (before[mq], "c4") for mq in queues)  # only queues that went to the new member


def test_a_member_listed_twice_gets_more_ring_points_as_in_java() -> None:
    calls: list[str] = []

    def recording(key: str) -> int:
        calls.append(key)
        return md5_hash(key)

    AllocateConsistentHash(2, recording)("a", [MessageQueue("T", "b", 0)], ["a", "b", "a"])
    assert calls[:6] == ["a-0", "a-1", "b-0", "b-1", "a-2", "a-3"]


def test_strategy_names() -> None:
    assert strategy_name(allocate_averagely) == "AVG"
    assert strategy_name(allocate_averagely_by_circle) == "AVG_BY_CIRCLE"
    assert strategy_name(AllocateConsistentHash()) == "CONSISTENT_HASH"
    assert strategy_name(AllocateByConfig([])) == "CONFIG"
    nearby = AllocateMachineRoomNearby(AllocateConsistentHash(), lambda mq: "r", lambda cid: "r")
    assert strategy_name(nearby) == "MACHINE_ROOM_NEARBY-CONSISTENT_HASH"


def test_a_strategy_that_is_not_callable_is_refused_when_the_consumer_is_made() -> None:
    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    with pytest.raises(TypeError, match="allocate_strategy"):
        PushConsumer("127.0.0.1:9876", "g", {"T": "*"}, handle, allocate_strategy="AVG")
    with pytest.raises(TypeError, match="allocate_strategy"):
        LitePullConsumer("127.0.0.1:9876", "g", allocate_strategy=None)
