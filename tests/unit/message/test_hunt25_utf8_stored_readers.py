"""Stored records whose topic or properties are not UTF-8 are read as RocketMQ 4.9.3 reads them.

4.9.3 decodes a record's topic and properties with ``new String(bytes, UTF_8)`` everywhere it reads one
(MessageDecoder.decode for getMessage answers, queryMessage / viewMessageById results and the Java client's
pulled messages; checkMessageAndReturnSize for dispatch; the SQL filter's decodeProperties): each malformed
sequence becomes one U+FFFD, and the TAGS code and index keys are hashed from that text.  Our dispatcher did
so already, but every stored reader refused such a record as "topic or properties are not UTF-8": the
store's GetResult.messages, message_at / message_by_id / query, the client's pull decoding (the record and
every one after it in the pull were held back as damaged), the Spark store source and ``store dump``.

A record's body is bytes and is handed over as it is.  The topic of a record can be read so by every reader;
the dispatcher still gives a record whose topic is not UTF-8 no queue entry (it logs the offset).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocketstore.client.consumer import decode_pulled
from rocketstore.errors import MessageDecodeError
from rocketstore.message.hashing import index_key_hash, java_string_hash, tags_code
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.properties import encode_properties, parse_properties
from rocketstore.message.record import Message, decode_dispatch_info, decode_record
from rocketstore.message.record_decode import decode_records
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.reads import record_properties

#: six commitlog records (IPv4 hosts, store host 127.0.0.1:10911, commitlog offset 1234): 0 TAGS / KEYS /
#: a property name and value not UTF-8 (ED A0 80, FF, 80, a cut C3); 1 topic "Topic" FF FE; 2 topic and
#: properties not UTF-8 (E2 82 'Q', F0 80 80 80, F4 90); 3 body not UTF-8 only; 4 TAGS a lone 80, KEYS a
#: lone E0; 5 a malformed sequence cut by the 0x02 separator (E2 02, CF 02)
RECORDS = [
    bytes.fromhex(
        "00000097daa320a7516fa58a0000000000000000000000000000000500000000000004d20000000000000000000000007f00"
        "000100002a9f0000018bcfe568007f00000100002a9f00000000000000000000000000000005626f64793006546f70696355"
        "00315441475301eda0804131024b455953016bff79206b32025550524f5080017661c302554e49515f4b4559014142434445"
        "46"
    ),
    bytes.fromhex(
        "00000078daa320a72668951c0000000000000000000000000000000500000000000004d20000000000000000000000007f00"
        "000100002a9f0000018bcfe568007f00000100002a9f00000000000000000000000000000005626f64793107546f706963ff"
        "fe0011544147530174616742024b455953016b62"
    ),
    bytes.fromhex(
        "0000007adaa320a73f61c4a60000000000000000000000000000000500000000000004d20000000000000000000000007f00"
        "000100002a9f0000018bcfe568007f00000100002a9f00000000000000000000000000000005626f6479320454e282510016"
        "544147530174f0808080024b455953016bf490206b6b"
    ),
    bytes.fromhex(
        "00000074daa320a7576c019e0000000000000000000000000000000500000000000004d20000000000000000000000007f00"
        "000100002a9f0000018bcfe568007f00000100002a9f0000000000000000000000000000000462fffe7906546f7069634200"
        "0f54414753017462024b455953016b62"
    ),
    bytes.fromhex(
        "00000071daa320a737a6ef6f0000000000000000000000000000000500000000000004d20000000000000000000000007f00"
        "000100002a9f0000018bcfe568007f00000100002a9f00000000000000000000000000000002623406546f70696355000e54"
        "4147530180024b45595301e002"
    ),
    bytes.fromhex(
        "00000076daa320a740a1dff90000000000000000000000000000000500000000000004d20000000000000000000000007f00"
        "000100002a9f0000018bcfe568007f00000100002a9f00000000000000000000000000000002623506546f70696355001354"
        "4147530161e2024b455953016bcf02580159"
    ),
]

#: 4.9.3's answers for RECORDS (captured by running its MessageDecoder.decode, new String(bytes, UTF_8),
#: string2messageProperties, messageProperties2String, tagsString2tagsCode and IndexFile.indexKeyHashMethod of
#: topic + "#" + key on the records): topic, topic hash, properties string as read, the decoded map written
#: again, TAGS, KEYS, tags code, (key, index hash) per key
JAVA = [
    ("TopicU", -1784167130,
     "TAGS\x01\ufffdA1\x02KEYS\x01k\ufffdy k2\x02UPROP\ufffd\x01va\ufffd\x02UNIQ_KEY\x01ABCDEF",
     "KEYS\x01k\ufffdy k2\x02UNIQ_KEY\x01ABCDEF\x02TAGS\x01\ufffdA1\x02UPROP\ufffd\x01va\ufffd",
     "\ufffdA1", "k\ufffdy k2", 62979277, [("k\ufffdy", 1149582570), ("k2", 1902644828)]),
    ("Topic\ufffd\ufffd", 527488239, "TAGS\x01tagB\x02KEYS\x01kb",
     "KEYS\x01kb\x02TAGS\x01tagB",
     "tagB", "kb", 3552232, [("kb", 883170965)]),
    ("T\ufffdQ", 2112328, "TAGS\x01t\ufffd\ufffd\ufffd\ufffd\x02KEYS\x01k\ufffd\ufffd kk",
     "KEYS\x01k\ufffd\ufffd kk\x02TAGS\x01t\ufffd\ufffd\ufffd\ufffd",
     "t\ufffd\ufffd\ufffd\ufffd", "k\ufffd\ufffd kk", 2124496308,
     [("k\ufffd\ufffd", 867357072), ("kk", 1496108933)]),
    ("TopicB", -1784167149, "TAGS\x01tb\x02KEYS\x01kb",
     "KEYS\x01kb\x02TAGS\x01tb",
     "tb", "kb", 3694, [("kb", 1903210809)]),
    ("TopicU", -1784167130, "TAGS\x01\ufffd\x02KEYS\x01\ufffd\x02",
     "KEYS\x01\ufffd\x02TAGS\x01\ufffd",
     "\ufffd", "\ufffd", 65533, [("\ufffd", 892594208)]),
    ("TopicU", -1784167130, "TAGS\x01a\ufffd\x02KEYS\x01k\ufffd\x02X\x01Y",
     "KEYS\x01k\ufffd\x02X\x01Y\x02TAGS\x01a\ufffd",
     "a\ufffd", "k\ufffd", 68540, [("k\ufffd", 1902579345)]),
]
#: small files: the test re-dispatches the whole commitlog at an abnormal open
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=6000,
                     max_hash_slot_num=500, max_index_num=2000)
BODIES = [b"body0", b"body1", b"body2", b"b\xff\xfey", b"b4", b"b5"]


@pytest.mark.parametrize("i", range(len(RECORDS)))
def test_a_record_reads_as_java_reads_it(i: int) -> None:
    topic, topic_hash, props, java_written, tags, keys, code, key_hashes = JAVA[i]
    m = decode_record(RECORDS[i])
    assert (m.topic, m.properties_string, m.tags, m.keys, m.body) == (topic, props, tags, keys, BODIES[i])
    assert java_string_hash(m.topic) == topic_hash
    assert encode_properties(parse_properties(m.properties_string)) == java_written
    assert tags_code(m.tags) == code
    assert [(k, index_key_hash(m.topic, k)) for k in m.keys.split(" ")] == key_hashes
    # the dispatcher reads the properties alike; a topic that is not UTF-8 it still refuses (logging it)
    for check_crc in (False, True) if i != 3 else (False,):
        if i in (1, 2):
            with pytest.raises(MessageDecodeError, match="topic is not UTF-8"):
                decode_dispatch_info(RECORDS[i], 0, 1234, check_crc=check_crc)
        else:
            info = decode_dispatch_info(RECORDS[i], 0, 1234, check_crc=check_crc)
            assert (info.topic, info.properties_string) == (topic, props)
    # verify's strict reading still names it
    if i != 3:
        with pytest.raises(MessageDecodeError, match="not UTF-8"):
            decode_record(RECORDS[i], strict_text=True)


def test_a_pull_body_of_such_records_reads_whole() -> None:
    body = b"".join(RECORDS)
    messages = decode_records(body)
    assert [(m.topic, m.properties_string) for m in messages] == [(j[0], j[2]) for j in JAVA]
    assert messages == [decode_record(r) for r in RECORDS]
    # the client's pull decoding: nothing held back as damaged but record 3, whose body was changed after its
    # CRC was taken (the bytes here were patched in place)
    got, undecodable = decode_pulled(body)
    assert [m.properties_string for m in got] == [j[2] for i, j in enumerate(JAVA) if i != 3]
    assert [u.message.body for u in undecodable if u.message is not None] == [BODIES[3]]


def test_the_sql_filter_reads_such_properties_as_java() -> None:
    assert record_properties(RECORDS[0]) == parse_properties(JAVA[0][2])
    assert record_properties(RECORDS[0])["UPROP\ufffd"] == "va\ufffd"


def test_spark_store_source_reads_such_records() -> None:
    pa = pytest.importorskip("pyarrow")
    np = pytest.importorskip("numpy")
    pytest.importorskip("pyspark")
    from rocketstore.spark.arrow_decode import record_batch
    from rocketstore.spark.store_source import _arrow_schema, store_schema

    buf = b"".join(RECORDS)
    positions = np.cumsum([0] + [len(r) for r in RECORDS[:-1]])
    batch = record_batch(buf, positions, np.arange(len(RECORDS)), _arrow_schema(store_schema()))
    assert isinstance(batch, pa.RecordBatch)
    assert batch.column("topic").to_pylist() == [j[0] for j in JAVA]
    assert batch.column("tags").to_pylist() == [j[4] for j in JAVA]
    assert batch.column("keys").to_pylist() == [j[5] for j in JAVA]
    assert dict(batch.column("properties").to_pylist()[0]) == parse_properties(JAVA[0][2])
    assert batch.column("body").to_pylist() == BODIES


def _store_with_damaged_properties(root: Path) -> list[int]:
    """Three messages of topic T; the second's TAGS, a KEYS token and a property value no longer UTF-8 on
    disk (as record 0 above), queues and index dispatched again from the commitlog at the next open."""
    offsets = []
    with MessageStore.open(root, CONFIG) as store:
        for i in range(3):
            r = store.put(Message.create("T", b"b%d" % i, tags="TagQ%d" % i, keys="kQy%d k2" % i,
                                         properties={"UP": "vQ%d" % i}))
            assert r.ok
            offsets.append(r.commit_log_offset)
        assert store.wait_dispatched()
    seg = sorted((root / "commitlog").iterdir())[0]
    data = bytearray(seg.read_bytes())
    for old, new in ((b"TagQ1", b"\xed\xa0\x80A1"), (b"kQy1", b"k\xffy1"), (b"vQ1", b"v\xc31")):
        at = data.find(old)
        assert at > 0
        data[at : at + len(old)] = new
    seg.write_bytes(bytes(data))
    (root / "abort").write_bytes(b"")
    (root / "checkpoint").unlink()
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    return offsets


def test_store_readers_hand_such_a_record_out(tmp_path: Path) -> None:
    root = tmp_path / "store"
    offsets = _store_with_damaged_properties(root)
    # as 4.9.3 reads them (record 0 above): ED A0 80 "A1" is one U+FFFD and "A1", FF and a cut C3 one each
    java_tags, java_key = JAVA[0][4], "k\ufffdy1"
    with MessageStore.open(root, CONFIG) as store:
        assert store.wait_dispatched()
        got = store.get("T", 0, 0, 32)
        assert [m.tags for m in got.messages] == ["TagQ0", java_tags, "TagQ2"]
        assert got.messages[1].properties["UP"] == "v\ufffd1"
        assert store.get("T", 0, 0, 32, tags=frozenset({tags_code(java_tags)})).queue_offsets == (1,)
        assert store.get("T", 0, 0, 32, match=lambda p: p.get("UP") == "v\ufffd1").queue_offsets == (1,)
        m = store.message_at(offsets[1])
        assert m is not None and m.keys == java_key + " k2"
        host = got.messages[1].store_host
        by_id = store.message_by_id(encode_offset_message_id(host, offsets[1]))
        assert by_id == m
        hits = store.query("T", java_key, 10, 0, 2**62).messages
        assert [q.commit_log_offset for q in hits] == [offsets[1]]
