"""A batch's records (message/batch_draft.py): what every record shares is packed once a batch.

``encode_batch_draft`` packs TOTALSIZE + MAGICCODE and SYSFLAG..BODYLENGTH of a one-size batch once per
batch and, per record, only what differs (BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, then the body
and properties); records of several sizes share SYSFLAG..PREPAREDOFFSET, packed once too;
``draft_batch`` range-checks one flag once when the batch has one.  These tests hold the bytes (each record
as ``encode_record`` writes it, every host family) and the refusals (a store timestamp or a flag that does
not pack: the statuses and remarks the store gave before, nothing written) to what they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.message.batch import MessageBatch
from rocketstore.message.batch_draft import draft_batch
from rocketstore.message.host import HostAddress
from rocketstore.message.record import Message, encode_record
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, store_host="10.0.0.1:10911")
V4 = HostAddress(bytes([192, 168, 0, 7]), 50001)
V6 = HostAddress(bytes(range(1, 17)), 50002)


def test_a_one_size_record_packs_only_what_differs() -> None:
    draft = draft_batch("TopicA", 3, [0, 0], [b"ab", b"cd"], [b"K\x01v1", b"K\x01v2"], b"W\x01x",
                        born=bytes(8), store=bytes(8))
    assert draft.layout is not None
    # size + magic, crc, queue id, flag, queue offset, physical offset, the shared middle, body, topic +
    # PROPLENGTH, properties, suffix
    assert len(draft.layout.unpack(bytes(draft.layout.size))) == 11


@pytest.mark.parametrize("born", [None, V4, V6])
@pytest.mark.parametrize("store_host", [None, V4, V6])
@pytest.mark.parametrize("flags", [[0, 0, 0], [7, -1, 2**31 - 1]])
@pytest.mark.parametrize("one_size", [True, False])
def test_each_record_of_a_batch_is_what_encode_record_writes(tmp_path: Path, born: HostAddress | None,
                                                             store_host: HostAddress | None, flags: list[int],
                                                             one_size: bool) -> None:
    messages = [Message("TopicA", b"body-%d" % i * (1 if one_size else i + 1), {"TAGS": "t", "KEYS": "k%d" % i},
                        queue_id=2, flag=flag,
                        sys_flag=2, born_timestamp=1_700_000_000_123, born_host=born, store_host=store_host,
                        reconsume_times=3, prepared_transaction_offset=0)
                for i, flag in enumerate(flags)]
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        store.put(Message("TopicA", b"first", queue_id=2))  # the batch starts past offset 0 and queue offset 0
        r = store.put_batch(messages)
        assert r.status is PutMessageStatus.PUT_OK
        assert len(set(r.record_sizes)) == (1 if one_size else len(flags))
        offset = r.commit_log_offset
        for i, (message, size) in enumerate(zip(messages, r.record_sizes)):
            record, _ = encode_record(message, store_host=store_host or store.store_host,
                                      born_host=born or store.store_host, store_timestamp=r.store_timestamp,
                                      queue_offset=r.queue_offset + i, commit_log_offset=offset)
            assert store._commitlog.read(offset, size) == bytes(record)
            offset += size


# captured from this store before the change (the remarks the struct module's errors give)
BAD_STAMPS = [
    (1.5, "store_timestamp is of type float, not int"),
    (2**63, "int too large to convert"),
    (-(2**63) - 1, "int too large to convert"),
    ("x", "store_timestamp is of type str, not int"),
]


@pytest.mark.parametrize(("stamp", "remark"), BAD_STAMPS)
def test_a_store_timestamp_that_does_not_pack_refuses_the_batch(tmp_path: Path, stamp: object, remark: str) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        store.put(Message("T", b"x"))
        end = store._commitlog.max_offset
        for size in (lambda i: 2, lambda i: i + 1):  # records of one size, of several sizes
            r = store.put_batch([Message("T", b"a" * size(i), {"K": "v%d" % i}, store_timestamp=stamp)
                                 for i in range(3)])
            assert (r.status, r.remark) == (PutMessageStatus.MESSAGE_ILLEGAL, remark)
        r = store.put_batch(MessageBatch("T", 0, [0, 0], [b"ab", b"cd"], [b"K\x01v1", b"K\x01v2"], "W\x01x",
                                         store_timestamp=stamp))  # type: ignore[arg-type]
        assert (r.status, r.remark) == (PutMessageStatus.MESSAGE_ILLEGAL, remark)
        assert store._commitlog.max_offset == end
        assert store.put_batch([Message("T", b"ab"), Message("T", b"cd")]).status is PutMessageStatus.PUT_OK


_RANGE = "an int field is outside Java's int range or a long field outside long's: "
_INT_RANGE = "'i' format requires -2147483648 <= number <= 2147483647"
# (flags, the MessageBatch's remark, the list's remark): captured from this store before the change
BAD_FLAGS = [
    ([2**31, 2**31], "", _RANGE + _INT_RANGE),
    ([0, 2**31], "", _RANGE + _INT_RANGE),
    ([-(2**31) - 1] * 2, "", _RANGE + _INT_RANGE),
    ([1.5, 1.5], "", _RANGE + "required argument is not an integer"),
    ([0, 0.0], "required argument is not an integer", "required argument is not an integer"),
]


@pytest.mark.parametrize(("flags", "batch_remark", "list_remark"), BAD_FLAGS)
def test_a_flag_that_does_not_pack_refuses_the_batch(tmp_path: Path, flags: list[object], batch_remark: str,
                                                    list_remark: str) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        bad: list[int] = flags  # type: ignore[assignment]
        r = store.put_batch(MessageBatch("T", 0, bad, [b"ab", b"cd"], [b"K\x01v1", b"K\x01v2"], "W\x01x"))
        assert (r.status, r.remark) == (PutMessageStatus.MESSAGE_ILLEGAL, batch_remark)
        r = store.put_batch([Message("T", b"ab", {"K": "v%d" % i}, flag=f) for i, f in enumerate(bad)])
        assert (r.status, r.remark) == (PutMessageStatus.MESSAGE_ILLEGAL, list_remark)
        assert store._commitlog.max_offset == 0
        r = store.put_batch(MessageBatch("T", 0, [True, True], [b"ab", b"cd"], [b"K\x01v1", b"K\x01v2"], ""))
        assert r.status is PutMessageStatus.PUT_OK
