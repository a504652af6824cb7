"""Reading the real RocketMQ 4.9.3 golden stores gives exactly what the real store read back from them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from rocketstore.store.dump import dump_store
from rocketstore.store.message_store import MessageStore

QUEUE_FIELDS = ("minOffset", "maxOffset", "cqEntries", "messages", "offsetByTime")


@pytest.fixture(scope="module")
def our_dump(golden_dir, golden_config) -> Callable[[str], dict[str, Any]]:  # type: ignore[no-untyped-def]
    """dump_store of each golden store opened read-only, computed once per module."""
    cache: dict[str, dict[str, Any]] = {}

    def get(name: str) -> dict[str, Any]:
        if name not in cache:
            with MessageStore.open(golden_dir / "stores" / name, golden_config(name), read_only=True) as store:
                cache[name] = dump_store(store)
        return cache[name]

    return get


def _queues(dump: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(t["topic"], q["queueId"]): q for t in dump["topics"] for q in t["queues"]}


def _first_difference(ours: list[Any], ref: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(ours, ref)):
        if a != b:
            return f"item {i}: ours {a!r}, reference {b!r}"
    return f"lengths differ: ours {len(ours)}, reference {len(ref)}"


def test_recovery_outcome_matches_reference(golden_store: str, our_dump, golden_dump) -> None:  # type: ignore[no-untyped-def]
    ours, ref = our_dump(golden_store), golden_dump(golden_store)
    assert ours["lastShutdownAbnormal"] == ref["lastShutdownAbnormal"]
    assert ours["afterRecover_maxPhyOffset"] == ref["afterRecover_maxPhyOffset"]


def test_commitlog_records_equal_reference(golden_store: str, our_dump, golden_dump) -> None:  # type: ignore[no-untyped-def]
    ours, ref = our_dump(golden_store)["commitlogRecords"], golden_dump(golden_store)["commitlogRecords"]
    assert ours == ref, _first_difference(ours, ref)


def test_every_topic_and_queue_of_the_reference_is_present(golden_store: str, our_dump, golden_dump) -> None:  # type: ignore[no-untyped-def]
    assert sorted(_queues(our_dump(golden_store))) == sorted(_queues(golden_dump(golden_store)))


@pytest.mark.parametrize("field", QUEUE_FIELDS)
def test_queue_field_equals_reference_in_every_queue(golden_store: str, field: str, our_dump, golden_dump) -> None:  # type: ignore[no-untyped-def]
    ours, ref = _queues(our_dump(golden_store)), _queues(golden_dump(golden_store))
    wrong = []
    for key, ref_queue in sorted(ref.items()):
        mine = ours.get(key, {}).get(field)
        if mine != ref_queue[field]:
            if isinstance(mine, list) and isinstance(ref_queue[field], list):
                wrong.append(f"{key[0]}/{key[1]}: {_first_difference(mine, ref_queue[field])}")
            else:
                wrong.append(f"{key[0]}/{key[1]}: ours {mine!r}, reference {ref_queue[field]!r}")
    assert not wrong, "\n".join(wrong[:10])


def test_queries_by_key_find_the_reference_hits(golden_store: str, our_dump, golden_dump) -> None:  # type: ignore[no-untyped-def]
    ours = {(q["topic"], q["key"]): q for q in our_dump(golden_store)["queries"]}
    ref = {(q["topic"], q["key"]): q for q in golden_dump(golden_store)["queries"]}
    assert sorted(ours) == sorted(ref)
    wrong = []
    for key, ref_query in sorted(ref.items()):
        # compared regardless of order, duplicates kept (killed indexes one TopicA/key-243 message twice)
        mine = sorted(json.dumps(h, sort_keys=True) for h in ours[key]["hits"])
        theirs = sorted(json.dumps(h, sort_keys=True) for h in ref_query["hits"])
        if mine != theirs:
            wrong.append(f"{key}: ours {mine}, reference {theirs}")
    assert not wrong, "\n".join(wrong[:10])
