"""The broker's look-ups by offset message id (VIEW_MESSAGE_BY_ID) and by key (QUERY_MESSAGE) meet a record
whose body was damaged on disk after it was stored.  They answered it as intact: the broker re-encodes the
records it reads, so the changed body reached the client with a fresh, matching CRC.  Now the answer is
SYSTEM_ERROR whose remark names the damaged record; the records around it are still found.

Real name server, broker and admin client; the byte is flipped in the commitlog segment file while the broker
runs (``_damage``, shared with the consumers' tests)."""

from __future__ import annotations

import pytest
from local_cluster import LocalCluster, run_within
from test_hunt20_badbody_skip import TEST_TIMEOUT_S
from test_hunt20_corruptread_pull import DAMAGED, _damage

from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.record import decode_record
from rocketstore.remoting.codes import ResponseCode


def _damaged_record(cluster: LocalCluster, topic: str) -> tuple[int, str, str]:
    """(commitlog offset, offset message id, UNIQ_KEY) of the record damaged at queue offset DAMAGED."""
    _damage(cluster, topic, "body")
    store = cluster.broker.store
    raw = cluster.call(lambda: store.get(topic, 0, DAMAGED, 1).records[0])
    record = decode_record(raw)  # (unchecked: the header is intact)
    return record.commit_log_offset, encode_offset_message_id(store.store_host, record.commit_log_offset), \
        record.uniq_key or ""


def test_view_message_by_id_answers_an_error_naming_a_damaged_record(cluster: LocalCluster) -> None:
    topic = "Hunt20CleanopenView"
    offset, msg_id, _ = _damaged_record(cluster, topic)
    entries = cluster.call(lambda: cluster.broker.store.queue_entries(topic, 0, DAMAGED + 1, 1))
    assert entries
    after_id = encode_offset_message_id(cluster.broker.store.store_host, entries[0][0])

    async def go() -> tuple[object, bytes]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            try:
                outcome: object = await admin.view_message(msg_id)
            except BrokerError as exc:
                outcome = exc
            return outcome, (await admin.view_message(after_id)).body

    outcome, next_body = run_within(go, TEST_TIMEOUT_S)
    assert isinstance(outcome, BrokerError), f"the damaged record was answered as intact: {outcome!r}"
    assert outcome.code == ResponseCode.SYSTEM_ERROR
    assert "damaged" in str(outcome) and "body CRC mismatch" in str(outcome) and str(offset) in str(outcome)
    assert next_body == b"message %d" % (DAMAGED + 1)


def test_query_by_key_answers_an_error_naming_a_damaged_record(cluster: LocalCluster) -> None:
    topic = "Hunt20CleanopenQuery"
    offset, _, uniq_key = _damaged_record(cluster, topic)
    assert uniq_key
    cluster.wait_dispatched()

    async def go() -> object:
        async with AdminClient(cluster.namesrv_addr) as admin:
            try:
                return await admin.query_by_uniq_key(topic, uniq_key)
            except BrokerError as exc:
                return exc

    outcome = run_within(go, TEST_TIMEOUT_S)
    assert isinstance(outcome, BrokerError), f"the damaged record was answered as intact: {outcome!r}"
    assert outcome.code == ResponseCode.SYSTEM_ERROR
    assert "body CRC mismatch" in str(outcome) and str(offset) in str(outcome)


@pytest.mark.parametrize("offset_past_end", [True, False])
def test_view_message_by_id_of_no_record_still_answers_not_found(cluster: LocalCluster,
                                                                 offset_past_end: bool) -> None:
    """An offset where no record starts keeps its 4.9.3 answer."""
    topic = "Hunt20CleanopenNone"
    offset, _, _ = _damaged_record(cluster, topic)
    at = cluster.broker.store.max_commit_log_offset + 100 if offset_past_end else offset + 7
    msg_id = encode_offset_message_id(cluster.broker.store.store_host, at)

    async def go() -> BrokerError:
        async with AdminClient(cluster.namesrv_addr) as admin:
            with pytest.raises(BrokerError) as caught:
                await admin.view_message(msg_id)
            return caught.value

    error = run_within(go, TEST_TIMEOUT_S)
    assert error.code == ResponseCode.SYSTEM_ERROR and "can not find message by the offset" in str(error)
