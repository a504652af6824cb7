"""The trace of a producer (RocketMQ 4.9.3's SendMessageTraceHookImpl and EndTransactionTraceHookImpl):
a Pub record for each send whose result came back, an EndTransaction record for each end of a
transaction, handed to the producer's :class:`TraceDispatcher`.

A Pub is recorded, as in 4.9.3, once the send returned a SendResult: with the time from just before the
request of the attempt that answered (timestamp; failed attempts before it are not counted) to its answer
(costTime), success = SEND_OK, the client msgId and the broker's
offsetMsgId, the master address sent to (storeHost), the body length and the message type (a half message
Trans_Msg_Half, a delayed one Delay_Msg, else Normal_Msg).  Not recorded: a send that raised, a oneway
send (no result), a send to a topic starting with the trace topic's name (trace data is never traced), and
a send the broker answered with TRACE_ON=false (its traceOn setting).  The region is the answer's
MSG_REGION (DefaultRegion when absent).

MSG_REGION and TRACE_ON come with the broker's answer, as the SendResult's ``region_id`` and ``trace_on``
(Java's SendResult regionId and traceOn).

Loop-bound, as the producer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, TypeVar

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.namespace import without_namespace
from rocketstore.client.trace import DEFAULT_REGION_ID, MessageType, TraceBean, TraceContext, TraceType
from rocketstore.client.trace_dispatch import TraceDispatcher
from rocketstore.errors import InvalidMessageIdError
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import PropertyName
from rocketstore.remoting.tls import ClientTls

if TYPE_CHECKING:
    from rocketstore.client.producer import Producer, SendResult

__all__ = ["ProducerTrace", "pub_message_type"]

log = logging.getLogger(__name__)

_Result = TypeVar("_Result", bound="SendResult")
#: the property of a timed message (Java checks it beside DELAY for Delay_Msg)
_START_DELIVER_TIME = "__STARTDELIVERTIME"


def pub_message_type(properties: Mapping[str, str] | None) -> MessageType:
    """A Pub's msgType as 4.9.3's sendKernelImpl sets it: Delay_Msg for a DELAY or __STARTDELIVERTIME
    property (checked last, so it wins), else Trans_Msg_Half for TRAN_MSG=true, else Normal_Msg."""
    if not properties:
        return MessageType.Normal_Msg
    if PropertyName.DELAY in properties or _START_DELIVER_TIME in properties:
        return MessageType.Delay_Msg
    if properties.get(PropertyName.TRAN_MSG) == "true":
        return MessageType.Trans_Msg_Half
    return MessageType.Normal_Msg


def _now_ms() -> int:
    return int(time.time() * 1000)


class ProducerTrace:
    """The trace side of one Producer.  Loop-bound."""

    def __init__(self, producer: Producer, namesrv_addr: str, *, trace_topic: str | None = None,
                 credentials: SessionCredentials | None = None, tls: ClientTls = None,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        self.producer = producer
        self.dispatcher = TraceDispatcher(namesrv_addr, producer.group, "PRODUCE", trace_topic=trace_topic,
                                          credentials=credentials, tls=tls, namesrv_domain=namesrv_domain,
                                          namesrv_domain_subgroup=namesrv_domain_subgroup)

    @property
    def trace_topic(self) -> str:
        return self.dispatcher.trace_topic

    async def close(self) -> None:
        await self.dispatcher.close()

    async def pub(self, sending: Awaitable[_Result], topic: str, body_length: int, tags: str | None,
                  keys: str | list[str] | None, properties: Mapping[str, str] | None, *,
                  began_ms: list[int] | None = None) -> _Result:
        """Await *sending* (a send of the producer's, not yet started) and record its Pub; the send's
        result or exception is passed on unchanged, whatever happens to the trace.  *began_ms*: the send
        sets its item to the start of each attempt; the Pub's timestamp and costTime are then the last
        attempt's (the one that answered), as Java's hook times each sendKernelImpl call; else from now."""
        called_ms = _now_ms()
        result = await sending
        try:
            began = began_ms[0] if began_ms is not None and began_ms[0] else called_ms
            self._record_pub(result, began, topic, body_length, tags, keys, properties)
        except Exception:
            log.exception("Pub trace of %s not recorded", result.msg_id)
        return result

    def _record_pub(self, result: SendResult, began_ms: int, topic: str, body_length: int, tags: str | None,
                    keys: str | list[str] | None, properties: Mapping[str, str] | None) -> None:
        if topic.startswith(self.dispatcher.trace_topic) or not result.trace_on:
            return
        cost_ms = _now_ms() - began_ms
        if properties:  # TAGS / KEYS given as properties went out as the message's (the arguments win)
            tags = tags or properties.get(PropertyName.TAGS)
            keys = keys or properties.get(PropertyName.KEYS)
        space = self.producer.namespace  # the topic and group are traced without it, as 4.9.3's hook does
        bean = TraceBean(topic=without_namespace(space, topic), msg_id=result.msg_id,
                         offset_msg_id=result.offset_msg_id, tags=tags or None,
                         keys=(keys if isinstance(keys, str) else " ".join(keys)) if keys else None,
                         store_host=self._store_host(topic, result), body_length=body_length,
                         msg_type=pub_message_type(properties))
        self.dispatcher.append(TraceContext(TraceType.Pub, began_ms, result.region_id,
                                            without_namespace(space, self.producer.group),
                                            cost_time_ms=cost_ms, success=result.status == "SEND_OK",
                                            beans=(bean,)))

    def _store_host(self, topic: str, result: SendResult) -> str:
        """The master address the send went to (Java's brokerAddr): from the producer's cached routes, else
        the host of the offset message id (the broker's store host), else empty."""
        addr = self.producer.cached_master_addr(topic, result.message_queue.broker_name)
        if addr is not None:
            return addr
        try:
            return str(decode_offset_message_id(result.offset_msg_id)[0])
        except InvalidMessageIdError:
            return ""

    def end_transaction(self, topic: str, *, tags: str | None, keys: str | None, properties: Mapping[str, str],
                        msg_id: str, transaction_id: str | None, store_host: str, state: str,
                        from_transaction_check: bool) -> None:
        """Record the end of a transaction (4.9.3's EndTransactionTraceHookImpl): msgType Trans_msg_Commit
        whatever the state, the region the message carries (else DefaultRegion), the time now.  A topic
        starting with the trace topic's name is not recorded; nothing here raises."""
        try:
            if topic.startswith(self.dispatcher.trace_topic):
                return
            tags = tags or properties.get(PropertyName.TAGS)  # as the message went out (see _record_pub)
            keys = keys or properties.get(PropertyName.KEYS)
            space = self.producer.namespace  # (as in a Pub)
            bean = TraceBean(topic=without_namespace(space, topic), msg_id=msg_id, tags=tags or None,
                             keys=keys or None,
                             store_host=store_host, msg_type=MessageType.Trans_msg_Commit,
                             transaction_id=transaction_id, transaction_state=state,
                             from_transaction_check=from_transaction_check)
            region = properties.get(PropertyName.MSG_REGION) or DEFAULT_REGION_ID
            self.dispatcher.append(TraceContext(TraceType.EndTransaction, _now_ms(), region,
                                                without_namespace(space, self.producer.group), beans=(bean,)))
        except Exception:
            log.exception("EndTransaction trace of %s not recorded", msg_id)
