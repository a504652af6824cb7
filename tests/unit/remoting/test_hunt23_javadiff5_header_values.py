"""Header field values that 4.9.3's RemotingCommand.decodeCommandCustomHeader reads differently from a plain
parse: the expected values below were produced by 4.9.3's own decoder (Integer.parseInt / Long.parseLong per
field; a value it cannot parse is logged and the field left unset, null or its initial value).

* Unicode decimal digits of the BMP (Arabic-Indic, Devanagari) are read as 4.9.3's parseInt reads them.
  (A digit beyond the BMP, which Java's parseInt refuses, is still read by the send header's fast reader:
  a check there costs every send ~0.3 us for input no client sends.)
* An optional number field (reconsumeTimes, maxReconsumeTimes, topicSysFlag, bodyCrc32 ...) that does not
  parse reads as absent in 4.9.3 and the request goes on; we refused the whole request.
"""

from __future__ import annotations

import pytest

from rocketstore.remoting.header_fields import HeaderFieldError
from rocketstore.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    QueryConsumeQueueRequestHeader,
    RegisterBrokerRequestHeader,
)
from rocketstore.remoting.send_headers import (
    SendMessageRequestHeader,
    parse_send_message_header,
    send_message_header_fields,
)

V1 = {"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "queueId": "1",
      "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "0"}
V2 = {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0"}
SEND_MESSAGE, SEND_MESSAGE_V2 = 10, 310


@pytest.mark.parametrize(("code", "ext", "queue_id"), [
    (SEND_MESSAGE, {**V1, "queueId": "\u0661\u0662"}, 12),  # Arabic-Indic 12: 4.9.3 reads 12
    (SEND_MESSAGE_V2, {**V2, "e": "\u0967"}, 1),  # Devanagari 1: 4.9.3 reads 1
])
def test_send_header_still_takes_bmp_unicode_digits(code: int, ext: dict[str, str], queue_id: int) -> None:
    assert send_message_header_fields(code, ext)[4] == queue_id
    assert parse_send_message_header(code, ext).queue_id == queue_id


def test_unparseable_optional_send_numbers_read_as_absent() -> None:
    # 4.9.3: reconsumeTimes null, maxReconsumeTimes null; the send goes on
    ext = {**V1, "reconsumeTimes": "", "maxReconsumeTimes": "x"}
    header = SendMessageRequestHeader.from_ext_fields(ext)
    assert (header.queue_id, header.reconsume_times, header.max_reconsume_times) == (1, None, None)
    fields = send_message_header_fields(SEND_MESSAGE, ext)
    assert (fields[9], fields[12]) == (None, None)


def test_unparseable_optional_send_numbers_read_as_absent_v2() -> None:
    # 4.9.3: j null, l null, k true
    ext = {**V2, "j": "1 ", "l": "2147483648", "k": "true"}
    fields = send_message_header_fields(SEND_MESSAGE_V2, ext)
    assert (fields[9], fields[10], fields[12]) == (None, True, None)
    header = SendMessageRequestHeader.from_ext_fields_v2(ext)
    assert (header.reconsume_times, header.unit_mode, header.max_reconsume_times) == (None, True, None)


def test_unparseable_optional_numbers_of_other_headers_keep_their_defaults() -> None:
    back = ConsumerSendMsgBackRequestHeader.from_ext_fields(
        {"offset": "100", "group": "g", "delayLevel": "0", "maxReconsumeTimes": "16 "})
    assert (back.commit_log_offset, back.max_reconsume_times) == (100, None)  # 4.9.3: maxReconsumeTimes null

    reg = RegisterBrokerRequestHeader.from_ext_fields(
        {"brokerName": "b", "brokerAddr": "1.2.3.4:10911", "clusterName": "c", "haServerAddr": "1.2.3.4:10912",
         "brokerId": "0", "bodyCrc32": "x"})
    assert reg.body_crc32 == 0  # 4.9.3: bodyCrc32 keeps its initial 0

    create = CreateTopicRequestHeader.from_ext_fields(
        {"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
         "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0x1"})
    assert create.topic_sys_flag is None  # 4.9.3: topicSysFlag null

    query = QueryConsumeQueueRequestHeader.from_ext_fields(
        {"topic": "T", "queueId": "x", "index": "1.0", "count": "+5"})
    assert (query.queue_id, query.index, query.count) == (0, 0, 5)  # 4.9.3: 0, 0, 5


def test_unparseable_required_number_still_refused() -> None:
    with pytest.raises(HeaderFieldError) as caught:
        SendMessageRequestHeader.from_ext_fields({**V1, "queueId": "1 "})
    assert caught.value.field_name == "queueId"
