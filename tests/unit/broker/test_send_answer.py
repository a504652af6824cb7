"""The send handler's hand-written response extFields equal SendMessageResponseHeader's rendering."""

from __future__ import annotations

import pytest

from rocketstore.broker.send import _answer
from rocketstore.message.host import parse_host
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import SendMessageResponseHeader
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
