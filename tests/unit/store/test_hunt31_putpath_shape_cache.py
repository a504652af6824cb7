"""The put path's last properties shape (store/writes.py ``_last_shape``) serves only dicts it prints alike.

``MessageStore.put`` tries the format of the last plain dict it printed on the next one: the same number of
names, every one found, is the same set of names, and for names no two of which share a Java HashMap bucket
every insertion order prints the same.  These puts alternate shapes that the shortcut must tell apart (other
names of the same count, a None value, a separator in a value, two names sharing a bucket, whose order is
their insertion order) and check every stored record against ``encode_record`` and the dispatch facts
against the records.
"""

from __future__ import annotations

from pathlib import Path

from rocketstore.message.properties import java_hashmap_order
from rocketstore.message.record import Message, encode_record
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus
from rocketstore.store.verify import verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, store_host="10.0.0.1:10911")

# TAGS and p10 share a bucket of a 16-bucket HashMap: their order is the order they were put in
assert java_hashmap_order(("TAGS", "p10")) == java_hashmap_order(("p10", "TAGS")) == (0, 1)

PROPERTIES = [
    {"TAGS": "a", "KEYS": "k1"},
    {"KEYS": "k2", "TAGS": "b"},  # the same names, the other insertion order: printed alike
    {"TAGS": "c", "p1": "x"},  # as many names, one other
    {"TAGS": "d", "KEYS": None},  # a None value: skipped
    {"KEYS": "k3", "TAGS": "e\x01f"},  # a separator inside a value: no dispatch facts from the dict
    {"TAGS": "g", "p10": "y"},
    {"p10": "z", "TAGS": "h"},  # the same names, one bucket: printed in this order, not the last one's
    {"TAGS": "i", "p10": "w"},
    {"KEYS": "k4", "TAGS": "j"},
    {"UNIQ_KEY": "u1"},
    {"UNIQ_KEY": "u2", "KEYS": "k5", "TAGS": "k"},
    {"TAGS": "l", "KEYS": "k6", "UNIQ_KEY": "u3"},
    {},
    {"TAGS": "m", "KEYS": 5},  # a value that is no str: refused, nothing written
]


def test_each_put_prints_its_own_dict(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        for round_ in range(2):
            for i, props in enumerate(PROPERTIES):
                m = Message("TopicA", b"body %d" % i, dict(props), queue_id=round_)
                r = store.put(m)
                if any(v is not None and not isinstance(v, str) for v in props.values()):
                    assert r.status is PutMessageStatus.MESSAGE_ILLEGAL
                    continue
                assert r.status is PutMessageStatus.PUT_OK
                record, _ = encode_record(m, store_host=store.store_host, born_host=store.store_host,
                                          store_timestamp=r.store_timestamp, queue_offset=r.queue_offset,
                                          commit_log_offset=r.commit_log_offset)
                assert store._commitlog.read(r.commit_log_offset, r.wrote_bytes) == bytes(record), props
        assert store.wait_dispatched()
        assert verify_store(store).ok
        for round_ in range(2):
            got = store.get("TopicA", round_, 0, 32)
            assert got.status.name == "FOUND"
