"""The send handler's hand-written answers: extFields equal to SendMessageResponseHeader's rendering, template
frames equal to the encoded response, messages built slot by slot equal to the dataclass's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketstore.broker.broker import Broker
from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.send import (
    _SUCCESS_CODE_FOR_STATUS,
    _answer,
    _answer_template,
    _new_message,
    _region_fields,
    send_message_frame,
    send_message_now,
)
from rocketstore.message.host import parse_host
from rocketstore.message.message_id import decode_offset_message_id, encode_offset_message_id
from rocketstore.message.record import Message
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.frame_decoder import decode_command
from rocketstore.remoting.send_headers import SendMessageResponseHeader
from rocketstore.store.config import StoreConfig
from rocketstore.store.results import PutMessageStatus, PutResult


@pytest.mark.parametrize(("offset", "queue_offset", "queue_id", "count"),
                         [(0, 0, 0, 1), (123_456_789, 42, 3, 1), (1 << 40, (1 << 62) + 5, 7, 3)])
def test_send_answer_ext_fields_match_the_typed_header(offset: int, queue_offset: int, queue_id: int,
                                                       count: int) -> None:
    host = parse_host("192.168.7.9:10911")
    result = PutResult(PutMessageStatus.PUT_OK, offset, 200 * count, queue_offset, 1_700_000_000_000, count,
                       "TopicA", queue_id, "", host, (200,) * count if count > 1 else ())
    region = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {}).with_opaque(9)
    response = _answer(request, result, queue_id, region)
    assert response.code == ResponseCode.SUCCESS and response.opaque == 9
    typed = SendMessageResponseHeader(msg_id=result.msg_id, queue_id=queue_id,
                                      queue_offset=queue_offset).to_ext_fields()
    typed.update(region)
    assert list(response.ext_fields.items()) == list(typed.items())


@pytest.mark.parametrize("status", [PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                                    PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE])
@pytest.mark.parametrize(("region_id", "trace_on"), [("DefaultRegion", True), ("east\u00e9\"1", False)])
def test_send_answer_template_writes_the_answers_frame(status: PutMessageStatus, region_id: str,
                                                       trace_on: bool) -> None:
    """send_message_now's success-like answers leave as template frames; they must be _answer's bytes."""
    config = BrokerConfig(broker_name="b", region_id=region_id, trace_on=trace_on)
    host = parse_host("10.0.0.1:10911")
    result = PutResult(status, 1 << 33, 200, 12_345, 1_700_000_000_000, 1, "TopicA", 2, "", host, ())
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {}).with_opaque(41)
    expected = encode_command(_answer(request, result, 2, _region_fields(config)))
    code = _SUCCESS_CODE_FOR_STATUS[status]
    assert type(code) is int
    frame = _answer_template(config).encode(code, 41, (result.msg_id, "2", str(result.queue_offset)))
    assert frame == expected


def test_failed_put_statuses_have_no_template_code() -> None:
    assert set(_SUCCESS_CODE_FOR_STATUS) == {PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                                             PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
                                             PutMessageStatus.SLAVE_NOT_AVAILABLE}


def test_new_message_equals_the_dataclass_constructor() -> None:
    host = parse_host("10.0.0.1:10911")
    args = ("TopicA", b"body", {"TAGS": "a"}, 3, 7, 8, 1_700_000_000_000, host, None, 2)
    built = _new_message(*args)
    assert built == Message(*args)
    assert built.prepared_transaction_offset == 0 and built.store_timestamp is None


class _Peer:
    """What the send handler reads of a connection: its peer address and a slot for the parsed host."""

    def __init__(self) -> None:
        self.peer = ("127.0.0.1", 5555)
        self.peer_address = "127.0.0.1:5555"
        self.attributes: dict[str, object] = {}


def test_the_immediate_send_answers_with_the_frame_of_send_message_nows_response(tmp_path: Path) -> None:
    async def go() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1"),
                        StoreConfig(store_path_root_dir=str(tmp_path / "b"), flush_disk_type="ASYNC_FLUSH"))
        await broker.start()
        try:
            def request(opaque: int, topic: str = "FrameTopic") -> RemotingCommand:
                ext = {"a": "p", "b": topic, "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1700000000000",
                       "h": "0", "i": "UNIQ_KEY\x01AB\x02WAIT\x01true\x02TAGS\x01TagA", "j": "0", "k": "false",
                       "m": "false"}
                return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"body").with_opaque(opaque)

            plain = send_message_now(broker, _Peer(), request(5))  # type: ignore[arg-type]
            frame = send_message_frame(broker, _Peer(), request(6))  # type: ignore[arg-type]
            assert plain is not None and plain.code == ResponseCode.SUCCESS and isinstance(frame, bytes)
            got = decode_command(frame[4:])
            # the next message of the same queue, the same size: one queue offset and one record further on
            host, first_offset = decode_offset_message_id(plain.ext_fields["msgId"])
            assert host == broker.store_host
            size = broker.store.max_commit_log_offset - first_offset
            assert size % 2 == 0
            expected = dict(plain.ext_fields, queueOffset=str(int(plain.ext_fields["queueOffset"]) + 1),
                            msgId=encode_offset_message_id(host, first_offset + size // 2))
            assert frame == encode_command(plain.make_response(ResponseCode.SUCCESS, ext_fields=expected)
                                           .with_opaque(6))
            assert list(got.ext_fields) == list(plain.ext_fields) and got.opaque == 6 and got.is_response
            # refusals are still commands, as send_message_now answers them
            refused = send_message_frame(broker, _Peer(), request(7, topic="bad/topic"))  # type: ignore[arg-type]
            assert isinstance(refused, RemotingCommand) and refused.code == ResponseCode.SYSTEM_ERROR
        finally:
            await broker.close()

    asyncio.run(go())
