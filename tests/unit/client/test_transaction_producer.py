"""The transactional producer's pure parts: the state -> commitOrRollback mapping, the half message's
properties and send header (sysFlag TRANSACTION_PREPARED on every send path), the END_TRANSACTION headers
after a send and after a check, and how a CHECK_TRANSACTION_STATE is decoded and answered (against a
stand-in connection: no sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rocketstore.client import (
    LocalTransactionState,
    TransactionMessage,
    TransactionProducer,
    TransactionSendResult,
)
from rocketstore.client.producer import SendResult
from rocketstore.client.route import MessageQueue
from rocketstore.client.transaction_producer import (
    _HalfMessageProducer,
    as_state,
    end_header_after_check,
    end_header_after_send,
    end_transaction_type,
    half_message_properties,
)
from rocketstore.message.host import HostAddress
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.properties import encode_properties
from rocketstore.message.record import Message, StoredMessage, SysFlag, decode_record, encode_record
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.frame_decoder import decode_command
from rocketstore.remoting.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

COMMIT, ROLLBACK, UNKNOW = (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                            LocalTransactionState.UNKNOW)
STORE_HOST = HostAddress(bytes([10, 0, 0, 7]), 10911)
UNIQ = "0A000001000000000000000000000001"


def test_each_state_ends_with_its_message_sys_flag_transaction_type() -> None:
    assert end_transaction_type(COMMIT) == 8 == SysFlag.TRANSACTION_COMMIT_TYPE
    assert end_transaction_type(ROLLBACK) == 12 == SysFlag.TRANSACTION_ROLLBACK_TYPE
    assert end_transaction_type(UNKNOW) == 0 == SysFlag.TRANSACTION_NOT_TYPE
    assert [s.value for s in LocalTransactionState] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"]


def test_a_listener_answer_of_none_is_unknow_and_a_foreign_value_is_refused() -> None:
    assert as_state(None) is UNKNOW
    assert as_state(COMMIT) is COMMIT
    assert as_state("ROLLBACK_MESSAGE") is ROLLBACK
    for bad in (True, 8, "commit", object()):
        with pytest.raises(TypeError):
            as_state(bad)


def test_half_message_properties_drop_delay_and_name_the_group_without_touching_the_input() -> None:
    user = {"DELAY": "3", "color": "red", "TRAN_MSG": "false"}
    props = half_message_properties("tx-group", user)
    assert props == {"color": "red", "TRAN_MSG": "true", "PGROUP": "tx-group"}
    assert user == {"DELAY": "3", "color": "red", "TRAN_MSG": "false"}
    assert half_message_properties("g", None) == {"TRAN_MSG": "true", "PGROUP": "g"}


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(fn())


async def _noop_handler(connection: Any, request: RemotingCommand) -> None:
    return None


@pytest.mark.parametrize("properties", ["TRAN_MSG\x01true\x02PGROUP\x01g", ""])
def test_every_send_path_of_the_half_producer_marks_the_header_prepared(properties: str) -> None:
    async def go() -> None:
        producer = _HalfMessageProducer("127.0.0.1:9876", "g", _noop_handler, timeout_s=1.0, retry_times=0,
                                        credentials=None)
        try:
            fast = producer._ext_fields_v2("TopicA", 2, properties, False, 0)
            typed = producer._header("TopicA", 2, properties, False, 0)
            assert typed.sys_flag == SysFlag.TRANSACTION_PREPARED_TYPE
            typed_ext = typed.to_ext_fields_v2()
            assert fast.pop("g").isdecimal() and typed_ext.pop("g").isdecimal()
            assert list(fast.items()) == list(typed_ext.items()) and fast["f"] == "4"
            # the per-queue frame template the usual send writes
            template = producer._frame_template("TopicA", 2, False, 0, int(RequestCode.SEND_MESSAGE_V2),
                                                bool(properties))
            values = ("1700000000000", properties) if properties else ("1700000000000",)
            frame = template.encode(values, b"body", 5)
            command = decode_command(frame[4:])
            assert command.code == RequestCode.SEND_MESSAGE_V2 and command.ext_fields["f"] == "4"
            assert command.body == b"body"
        finally:
            await producer.close()

    run(go)


def test_the_half_producer_answers_a_transaction_send_result_with_the_brokers_transaction_id() -> None:
    mq = MessageQueue("TopicA", "broker-a", 1)
    offset_id = encode_offset_message_id(STORE_HOST, 4096)
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {}, opaque=3)
    plain = request.make_response(ResponseCode.SUCCESS, ext_fields={
        "msgId": offset_id, "queueId": "1", "queueOffset": "17"})
    result = _HalfMessageProducer._result(plain, UNIQ, mq)
    assert isinstance(result, TransactionSendResult) and isinstance(result, SendResult)
    assert (result.status, result.msg_id, result.offset_msg_id, result.message_queue, result.queue_offset) == (
        "SEND_OK", UNIQ, offset_id, mq, 17)
    assert result.local_transaction_state is UNKNOW and result.transaction_id is None
    with_id = request.make_response(ResponseCode.FLUSH_DISK_TIMEOUT, ext_fields={
        "msgId": offset_id, "queueId": "1", "queueOffset": "17", "transactionId": "T-1"})
    result = _HalfMessageProducer._result(with_id, UNIQ, mq)
    assert result.status == "FLUSH_DISK_TIMEOUT" and result.transaction_id == "T-1"


def test_end_transaction_after_a_send_names_the_half_message_by_its_offsets_and_uniq_key() -> None:
    result = SendResult("SEND_OK", UNIQ, encode_offset_message_id(STORE_HOST, 4096),
                        MessageQueue("TopicA", "broker-a", 1), 17)
    header = end_header_after_send("tx-group", result, 4096, COMMIT, None)
    assert header.to_ext_fields() == {"producerGroup": "tx-group", "tranStateTableOffset": "17",
                                      "commitLogOffset": "4096", "commitOrRollback": "8",
                                      "fromTransactionCheck": "false", "msgId": UNIQ}
    header = end_header_after_send("tx-group", result, 4096, UNKNOW, "T-1")
    ext = header.to_ext_fields()
    assert ext["commitOrRollback"] == "0" and ext["transactionId"] == "T-1"
    assert EndTransactionRequestHeader.from_ext_fields(ext) == header


def _stored(properties: dict[str, str], *, topic: str = "TopicA", body: bytes = b"payload") -> StoredMessage:
    """A half message record as a check carries it: real topic and queue restored, PREPARED sysFlag."""
    message = Message(topic, body, properties, queue_id=2, sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE,
                      born_timestamp=1_700_000_000_000)
    record, _ = encode_record(message, encode_properties(properties), store_host=STORE_HOST,
                              born_host=HostAddress(bytes([10, 0, 0, 8]), 50000), queue_offset=17,
                              commit_log_offset=4096, store_timestamp=1_700_000_000_001)
    return decode_record(bytes(record))


def test_end_transaction_after_a_check_echoes_the_asked_offsets_and_falls_back_to_the_offset_id() -> None:
    asked = CheckTransactionStateRequestHeader(tran_state_table_offset=17, commit_log_offset=4096, msg_id=UNIQ,
                                               transaction_id=UNIQ, offset_msg_id="X")
    header = end_header_after_check("tx-group", asked, _stored({"UNIQ_KEY": UNIQ, "PGROUP": "tx-group"}), ROLLBACK)
    assert header.to_ext_fields() == {"producerGroup": "tx-group", "tranStateTableOffset": "17",
                                      "commitLogOffset": "4096", "commitOrRollback": "12",
                                      "fromTransactionCheck": "true", "msgId": UNIQ, "transactionId": UNIQ}
    without_key = _stored({"PGROUP": "tx-group"})
    header = end_header_after_check("tx-group", asked, without_key, COMMIT)
    assert header.msg_id == encode_offset_message_id(STORE_HOST, 4096) == without_key.msg_id


class FakeConnection:
    """What a check handler uses of a connection: its peer address and oneway writes."""

    peer_address = "10.0.0.7:10911"

    def __init__(self) -> None:
        self.sent: list[RemotingCommand] = []

    async def oneway(self, command: RemotingCommand, timeout_s: float = 5.0) -> None:
        self.sent.append(command)


def _check_request(properties: dict[str, str], body: bytes | None = None) -> RemotingCommand:
    asked = CheckTransactionStateRequestHeader(tran_state_table_offset=17, commit_log_offset=4096,
                                               msg_id=properties.get("UNIQ_KEY"),
                                               transaction_id=properties.get("UNIQ_KEY"),
                                               offset_msg_id=encode_offset_message_id(STORE_HOST, 4096))
    if body is None:
        message = Message("TopicA", b"payload", properties, queue_id=2,
                          sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE)
        record, _ = encode_record(message, encode_properties(properties), store_host=STORE_HOST,
                                  born_host=STORE_HOST, queue_offset=17, commit_log_offset=4096)
        body = bytes(record)
    return RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, asked.to_ext_fields(), body,
                                   oneway=True, opaque=9)


async def _served(producer: TransactionProducer, request: RemotingCommand) -> FakeConnection:
    connection = FakeConnection()
    assert await producer._serve(connection, request) is None  # type: ignore[arg-type]
    await asyncio.gather(*producer._checks)
    return connection


@pytest.mark.parametrize("kind", ["sync", "async", "raises", "none"])
def test_a_check_is_answered_oneway_on_its_connection_with_the_listeners_state(kind: str) -> None:
    seen: list[TransactionMessage] = []

    def sync_check(message: TransactionMessage) -> LocalTransactionState | None:
        seen.append(message)
        if kind == "raises":
            raise RuntimeError("database down")
        return None if kind == "none" else COMMIT

    async def async_check(message: TransactionMessage) -> LocalTransactionState:
        seen.append(message)
        return COMMIT

    async def go() -> None:
        producer = TransactionProducer("127.0.0.1:9876", "tx-group",
                                       async_check if kind == "async" else sync_check)
        try:
            props = {"UNIQ_KEY": UNIQ, "PGROUP": "tx-group", "TAGS": "TagA", "KEYS": "k1", "TRAN_MSG": "true"}
            connection = await _served(producer, _check_request(props))
        finally:
            await producer.close()
        [message] = seen
        assert (message.topic, message.body, message.transaction_id, message.tags, message.keys) == (
            "TopicA", b"payload", UNIQ, "TagA", "k1")
        assert message.stored is not None and message.stored.commit_log_offset == 4096
        [answer] = connection.sent
        assert answer.code == RequestCode.END_TRANSACTION and answer.is_oneway
        header = EndTransactionRequestHeader.from_ext_fields(answer.ext_fields)
        expected = COMMIT if kind in ("sync", "async") else UNKNOW
        assert header == EndTransactionRequestHeader(
            producer_group="tx-group", tran_state_table_offset=17, commit_log_offset=4096,
            commit_or_rollback=end_transaction_type(expected), from_transaction_check=True, msg_id=UNIQ,
            transaction_id=UNIQ)
        assert (answer.remark is not None) == (kind == "raises")

    run(go)


def test_a_check_for_another_group_or_with_an_undecodable_body_is_not_answered() -> None:
    calls: list[TransactionMessage] = []

    async def go() -> None:
        producer = TransactionProducer("127.0.0.1:9876", "tx-group", lambda m: calls.append(m) or COMMIT)
        try:
            other = await _served(producer, _check_request({"UNIQ_KEY": UNIQ, "PGROUP": "other-group"}))
            garbage = await _served(producer, _check_request({"UNIQ_KEY": UNIQ}, body=b"\x00\x01not a record"))
            bad_header = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {}, b"", oneway=True)
            missing = await _served(producer, bad_header)
        finally:
            await producer.close()
        assert other.sent == garbage.sent == missing.sent == [] and calls == []

    run(go)


def test_other_requests_from_a_broker_are_not_supported_unless_oneway() -> None:
    async def go() -> None:
        producer = TransactionProducer("127.0.0.1:9876", "tx-group", lambda m: COMMIT)
        try:
            connection: Any = FakeConnection()
            request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {}, opaque=4)
            response = await producer._serve(connection, request)
            assert response is not None and response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert response.opaque == 4
            oneway = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {}, oneway=True)
            assert await producer._serve(connection, oneway) is None
        finally:
            await producer.close()

    run(go)


def test_a_transactional_producer_needs_a_group_and_is_closed_for_sends_after_close() -> None:
    with pytest.raises(ValueError):
        TransactionProducer("127.0.0.1:9876", "", lambda m: COMMIT)

    async def go() -> None:
        from rocketstore.client.errors import ClientError

        producer = TransactionProducer("127.0.0.1:9876", "tx-group", lambda m: COMMIT)
        with pytest.raises(TypeError):
            await producer.send_in_transaction("TopicA", b"x", None)  # type: ignore[arg-type]
        assert not producer.started, "nothing was sent"
        await producer.close()
        with pytest.raises(ClientError):
            await producer.send_in_transaction("TopicA", b"x", lambda m, a: COMMIT)

    run(go)
