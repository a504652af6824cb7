"""A single put keeps a dispatch fact exactly when the properties dict says what the stored string says.

The put path reads tags, keys and uniq key from the dict instead of the record, so it must hand the
dispatcher a fact only when the two agree: no separator inside a name or a value, no None value, not a
schedule-topic record.  ``drafting.fact_meta`` states that rule on the encoded string (counting
separators); these tests hold the put path's cheaper test (separators looked for in the values, names
checked once per format) to it, and check that puts rolling over many segments still write every record
where the commit log says it is.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rocketstore.message.properties import encode_properties
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.drafting import fact_meta
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus
from rocketstore.store.verify import verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 14, store_host="10.0.0.1:10911")

_NAMES = ("TAGS", "KEYS", "UNIQ_KEY", "a", "b\x01c", "d\x02", "100%", "é")
_VALUES = ("TagA", "k1 k2", "", "v\x01w", "x\x02", "%s", "😀", None)


def _props(rng: random.Random) -> dict[str, str | None]:
    return {rng.choice(_NAMES): rng.choice(_VALUES) for _ in range(rng.randrange(5))}


def test_a_put_keeps_a_fact_exactly_when_the_dict_says_what_the_record_says(tmp_path: Path) -> None:
    rng = random.Random(5)
    with MessageStore.open(tmp_path / "s", CONFIG, background=False) as store:
        facts = store._commitlog.facts
        kept = dropped = 0
        for i in range(600):
            props = _props(rng)
            topic = SCHEDULE_TOPIC if rng.random() < 0.1 else rng.choice(("TopicA", "TopicB"))
            before = len(facts)
            r = store.put(Message(topic, rng.randbytes(rng.randrange(40)), props, queue_id=i % 3),  # type: ignore[arg-type]
                          apply_delay=False)
            assert r.status is PutMessageStatus.PUT_OK
            want = fact_meta(topic, props, encode_properties(props))  # type: ignore[arg-type]
            if want is None:
                assert len(facts) == before
                dropped += 1
            else:
                assert len(facts) == before + 1
                fact = facts[-1]
                assert (fact[0], fact[1], fact[4], fact[6]) == (r.commit_log_offset, r.wrote_bytes, r.queue_offset,
                                                                r.store_timestamp)
                assert (fact[2], fact[7], fact[8], fact[9]) == want
                kept += 1
            if len(facts) > 100:
                assert store.wait_dispatched()
        assert kept > 100 and dropped > 100
        assert store.wait_dispatched()
        assert store._dispatcher.error is None
        assert verify_store(store).ok


def test_puts_across_many_segments_land_where_the_commit_log_says(tmp_path: Path) -> None:
    rng = random.Random(9)
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        results = []
        for i in range(400):
            body = rng.randbytes(rng.randrange(50, 400))
            r = store.put(Message.create("TopicA", body, tags="TagA", keys=f"k{i}"))
            assert r.status is PutMessageStatus.PUT_OK
            results.append((r, body))
            if i == 200:  # a put_batch in between rolls segments through the same commit log
                assert store.put_batch([Message.create("TopicA", b"b" * 300, keys=f"b{j}") for j in range(20)]).ok
        assert len(store._commitlog.files) > 5
        for r, body in results:
            m = store.message_at(r.commit_log_offset)
            assert m is not None and m.body == body and m.queue_offset == r.queue_offset
        assert store.wait_dispatched()
        assert verify_store(store).ok


def test_a_born_timestamp_that_is_no_int_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        assert store.put(Message("T", b"first")).ok
        end = store.max_commit_log_offset
        r = store.put(Message("T", b"x", born_timestamp=1.5))  # type: ignore[arg-type]
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.max_commit_log_offset == end
        ok = store.put(Message("T", b"next"))
        assert ok.ok and ok.commit_log_offset == end and ok.queue_offset == 1
        assert store.wait_dispatched()
        assert verify_store(store).ok


@pytest.mark.parametrize("bad_at", [0, 2])
def test_a_batch_holding_a_born_timestamp_that_is_no_int_is_refused_and_writes_nothing(tmp_path: Path,
                                                                                       bad_at: int) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        assert store.put(Message("T", b"first")).ok
        end = store.max_commit_log_offset
        batch = [Message("T", f"b{i}".encode(), born_timestamp=1.5 if i == bad_at else 7)  # type: ignore[arg-type]
                 for i in range(3)]
        assert store.put_batch(batch).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.max_commit_log_offset == end
        ok = store.put_batch([Message("T", b"n0"), Message("T", b"n1")])
        assert ok.ok and ok.commit_log_offset == end and ok.queue_offset == 1
        assert store.wait_dispatched()
        assert verify_store(store).ok
