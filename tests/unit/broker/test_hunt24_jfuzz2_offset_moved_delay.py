"""OFFSET_MOVED_EVENT records carry DELAY=0, as 4.9.3's broker writes them.

Captured from a 4.9.3 broker (VIEW_MESSAGE_BY_ID on its OFFSET_MOVED_EVENT record after a pull of group ``plg``
beyond the queue's end): the properties string is ``KEYS\\x01plg\\x02DELAY\\x010\\x02TAGS\\x01plg`` and the
record is 257 bytes; ours wrote it without DELAY (249 bytes), so commitlog offsets drifted from 4.9.3's.
"""
from __future__ import annotations

from types import SimpleNamespace

from rocketstore.broker import pull
from rocketstore.message.properties import encode_properties
from rocketstore.remoting.headers import PullMessageRequestHeader

# properties of the OFFSET_MOVED_EVENT record, captured from 4.9.3
JAVA_PROPERTIES = "KEYS\x01plg\x02DELAY\x010\x02TAGS\x01plg"


def test_offset_moved_event_carries_delay_zero() -> None:
    put = []

    class Store:
        def put(self, message, flush=None):
            put.append(message)
            return SimpleNamespace()

    broker = SimpleNamespace(config=SimpleNamespace(broker_name="broker-a"), store_host=("127.0.0.1", 10911),
                             store=Store(), count_put=lambda *a: None)
    h = PullMessageRequestHeader.from_ext_fields({
        "consumerGroup": "plg", "topic": "FzA", "queueId": "0", "queueOffset": "100", "maxMsgNums": "32",
        "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"})
    pull._offset_moved_event(broker, h, SimpleNamespace(next_begin_offset=6))
    assert len(put) == 1
    assert encode_properties(put[0].properties) == JAVA_PROPERTIES
