"""A send answer's variable values (a hex message id, or a batch's joined by commas, a queue id and an
offset) need no JSON quoting: the broker writes them through JsonResponseTemplate.encode_plain, which must
give encode's bytes for such values whatever the template's constant part holds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.broker import send
from rocketstore.broker.config import BrokerConfig
from rocketstore.message.host import parse_host
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.templates import JsonResponseTemplate
from rocketstore.store.results import PutMessageStatus, PutResult

CASES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PLAIN = st.text(st.sampled_from("0123456789ABCDEF,-"), max_size=80)
TRICKY_TEXT = st.text(st.sampled_from('ab"\\%{}\x00\x01\x1f\x7f\u00e9\u2028\u4e2d\U0001f600\ud800') | st.characters(),
                      max_size=12)


@CASES
@given(st.tuples(PLAIN, PLAIN, PLAIN), TRICKY_TEXT, TRICKY_TEXT, st.integers(-(2**31), 2**31 - 1),
       st.integers(-(2**31), 2**31 - 1), st.sampled_from([("msgId", "queueId", "queueOffset"), ("a%s", "b%%", "c")]))
def test_encode_plain_writes_encodes_bytes_for_plain_values(values: tuple[str, str, str], region: str, trace: str,
                                                             code: int, opaque: int, keys: tuple[str, ...]) -> None:
    template = JsonResponseTemplate(keys, {"MSG_REGION": region, "TRACE_ON": trace})
    assert template.encode_plain(code, opaque, values) == template.encode(code, opaque, values)


@pytest.mark.parametrize(("region_id", "count"), [("DefaultRegion", 1), ("east\u00e9\"1\u2028", 1), ("r", 3)])
def test_the_send_answer_frame_is_written_without_quoting_its_values(region_id: str, count: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    config = BrokerConfig(broker_name="b", region_id=region_id, trace_on=True)
    host = parse_host("10.0.0.1:10911")
    result = PutResult(PutMessageStatus.PUT_OK, 1 << 33, 200 * count, 12_345, 1_700_000_000_000, count, "TopicA", 2,
                       "", host, (200,) * count if count > 1 else ())
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {}).with_opaque(41)
    expected = encode_command(send._answer(request, result, 2, send._region_fields(config)))

    def quoting(*args: object) -> bytes:
        raise AssertionError("the send answer's values were quoted one by one")

    monkeypatch.setattr(JsonResponseTemplate, "encode", quoting)
    assert send._answer_frame(config, request, result, 2, send._region_fields(config)) == expected
