"""A record damaged on disk after it was stored (bit rot, or a segment the recovery at open did not re-check)
as the consumers meet it: one byte flipped in its body (its CRC no longer matches), in its magic code or in
its total size.  No group stops on it for good and it is never handed
over as intact: a push consumer and a lite pull consumer skip it with an ERROR naming topic, queue and
offset, deliver every other message (those after it in the same pull too) and commit past it; a
PullConsumer's result carries it apart (``PullResult.undecodable``) and resumes after it; the tools refuse
to show it, naming it.

Real name server, broker and clients; the bytes are flipped in the commitlog segment file with plain file
I/O while the broker runs (it reads through a shared mapping of the same pages, as it would read rotted
sectors)."""

from __future__ import annotations

import logging

import pytest
from commitlog_bytes import xor_commitlog_byte
from local_cluster import LocalCluster, run_within, send_bodies
from test_hunt20_badbody_skip import TEST_TIMEOUT_S, _polled_past, _pushed_past

from rocketstore.client import PullConsumer, PullStatus
from rocketstore.client.admin import AdminClient
from rocketstore.client.route import MessageQueue
from rocketstore.errors import MessageDecodeError

COUNT = 6
DAMAGED = 2  # the queue offset of the damaged record
GOOD = {i: f"message {i}".encode() for i in range(COUNT) if i != DAMAGED}
#: where in the record the byte is flipped (from its start; negative: from its end), and the XOR mask.  (A
#: flip that leaves the properties not UTF-8 is no damage a consumer can see: the record is read as 4.9.3's
#: client reads it, see test_hunt25_utf8_pulled_properties.)
FLIPS = {"body": (88 + 3, 0x01), "magic": (5, 0x40), "size": (1, 0x40)}
#: words of the ERROR / error naming each kind of damage
WORDS = {"body": "fails its CRC", "magic": "does not decode", "size": "does not decode"}


def _damage(cluster: LocalCluster, topic: str, kind: str) -> None:
    """Store COUNT messages in *topic* (one queue) and flip one byte of the one at queue offset DAMAGED."""
    cluster.create_topic(topic, queues=1)
    send_bodies(cluster, topic, [f"message {i}" for i in range(COUNT)])
    entries = cluster.call(lambda: cluster.broker.store.queue_entries(topic, 0, 0, COUNT))
    assert entries is not None and len(entries) == COUNT
    commit_log_offset, size = entries[DAMAGED][0], entries[DAMAGED][1]
    at, mask = FLIPS[kind]
    xor_commitlog_byte(cluster, commit_log_offset + (at if at >= 0 else size + at), mask)


def _assert_logged(caplog: pytest.LogCaptureFixture, topic: str, kind: str) -> None:
    errors = [r.getMessage() for r in caplog.records
              if r.levelno == logging.ERROR and r.name == "rocketstore.client.pull_loop"]
    assert len(errors) == 1, errors
    assert topic in errors[0] and "queue 0" in errors[0] and f"offset {DAMAGED} " in errors[0], errors[0]
    assert WORDS[kind] in errors[0], errors[0]


@pytest.mark.parametrize("kind", sorted(FLIPS))
def test_a_push_consumer_skips_a_damaged_record_and_consumes_the_rest(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.client.pull_loop")
    topic, group = f"Hunt20Rot{kind.title()}Push", f"hunt20-rot-{kind}-push"
    _damage(cluster, topic, kind)
    assert _pushed_past(cluster, topic, group, len(GOOD), COUNT) == GOOD
    _assert_logged(caplog, topic, kind)


@pytest.mark.parametrize("kind", ["body", "size"])
def test_a_lite_pull_consumer_skips_a_damaged_record_and_polls_the_rest(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.client.pull_loop")
    topic, group = f"Hunt20Rot{kind.title()}Lite", f"hunt20-rot-{kind}-lite"
    _damage(cluster, topic, kind)
    assert _polled_past(cluster, topic, group, len(GOOD), COUNT) == GOOD
    _assert_logged(caplog, topic, kind)


@pytest.mark.parametrize("kind", sorted(FLIPS))
def test_a_pull_consumer_result_names_the_damaged_record_and_resumes_after_it(
        cluster: LocalCluster, kind: str) -> None:
    topic = f"Hunt20Rot{kind.title()}Pull"
    _damage(cluster, topic, kind)
    mq = MessageQueue(topic, cluster.broker_name, 0)

    async def go():  # type: ignore[no-untyped-def]
        async with PullConsumer(cluster.namesrv_addr, "hunt20-rot-pull") as consumer:
            first = await consumer.pull(mq, 0, 32)
            rest = await consumer.pull(mq, first.next_begin_offset, 32)
            return first, rest

    first, rest = run_within(go, TEST_TIMEOUT_S)
    assert first.status == PullStatus.FOUND
    assert [u.queue_offset for u in first.undecodable] == [DAMAGED]
    bad = first.undecodable[0]
    text = bad.describe()
    assert WORDS[kind] in text and topic in text and f"offset {DAMAGED} " in text
    got = {m.queue_offset: m.body for m in first.messages + rest.messages}
    assert got == GOOD
    if kind == "body":  # the record holds together: the message is there, as stored, with the rest of its pull
        assert bad.message is not None and bad.message.body == b"mesrage 2"  # ("s" ^ 0x01), as stored
        assert first.next_begin_offset == COUNT
    else:  # the records after it are not found in that pull body: the next pull starts right after it
        assert bad.message is None and first.next_begin_offset == DAMAGED + 1


@pytest.mark.parametrize("kind", ["body", "magic"])
def test_the_tools_refuse_to_show_a_damaged_record_naming_it(cluster: LocalCluster, kind: str) -> None:
    topic = f"Hunt20Rot{kind.title()}Tools"
    _damage(cluster, topic, kind)

    async def go() -> tuple[BaseException | None, list[bytes]]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            try:
                await admin.message_by_offset(topic, cluster.broker_name, 0, DAMAGED)
                error = None
            except MessageDecodeError as exc:
                error = exc
            tail = await admin.queue_messages(topic, cluster.broker_name, 0, begin_offset=DAMAGED + 1)
        return error, [m.body for m in tail.messages]

    error, tail = run_within(go, TEST_TIMEOUT_S)
    assert isinstance(error, MessageDecodeError), "the tool showed a damaged record as intact"
    assert f"offset {DAMAGED} " in str(error) and topic in str(error) and WORDS[kind] in str(error)
    assert tail == [GOOD[i] for i in range(DAMAGED + 1, COUNT)]
