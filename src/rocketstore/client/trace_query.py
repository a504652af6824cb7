"""AdminClient's message trace query (mqadmin queryMsgTraceById): the trace messages whose KEYS hold a
message id, found with QUERY_MESSAGE in the trace topic, decoded, and cut down to the records about that
message.

As 4.9.3's QueryMsgTraceByIdSubCommand does: up to 64 trace messages stored up to now, every record in them
decoded (Java's TraceView) and only those whose msgId is the one asked kept, the trace message's born host
IP (no port) standing for the client that traced (``client_host``).  Besides Java: a record of a batch
send (msgIds joined by commas) counts for each of its ids, and a record that does not decode is skipped
with a warning (Java's decoder would throw and end the command) and counted in
:attr:`MessageTrace.undecodable`.

Mixed into AdminClient, whose ``query_by_key`` it uses.  Loop-bound.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketstore.client.errors import ClientError
from rocketstore.client.trace import (
    CPP_TRACE_TOPIC_PREFIX,
    RMQ_SYS_TRACE_TOPIC,
    TraceBean,
    TraceContext,
    TraceDataError,
    decode_trace_data,
)
from rocketstore.message.record import StoredMessage

__all__ = ["MessageTrace", "TraceAdmin", "TraceView", "trace_views"]

log = logging.getLogger(__name__)

#: how many trace messages one query asks each broker for (the maxNum mqadmin passes)
TRACE_QUERY_MAX_MESSAGES = 64


@dataclass(frozen=True, slots=True)
class TraceView:
    """One trace record about the message asked for: the decoded context (with its one bean), who sent the
    trace message (its born host's IP) and when the broker stored it."""

    context: TraceContext
    client_host: str
    #: store time of the trace message (a record without a timestamp of its own is sorted by it)
    stored_ms: int
    #: offset message id of the trace message that carried the record
    trace_msg_id: str

    @property
    def bean(self) -> TraceBean:
        return self.context.bean

    @property
    def time_ms(self) -> int:
        """The record's own timestamp, else the trace message's store time."""
        stamp = self.context.timestamp_ms
        return stamp if stamp is not None else self.stored_ms


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """What a trace query found: the records about the message, oldest first, and the records of the trace
    messages looked at that could not be decoded."""

    msg_id: str
    trace_topic: str
    views: tuple[TraceView, ...]
    undecodable: tuple[TraceDataError, ...] = field(default_factory=tuple)


def _concerns(bean: TraceBean, msg_id: str) -> bool:
    return bean.msg_id == msg_id or ("," in bean.msg_id and msg_id in bean.msg_id.split(","))


def trace_views(msg_id: str, trace_messages: list[StoredMessage],
                undecodable: list[TraceDataError] | None = None) -> list[TraceView]:
    """The records about *msg_id* in *trace_messages*, oldest first (by their timestamp, else their trace
    message's store time).  Records that do not decode go to *undecodable* (or raise without it); a body
    that is not UTF-8 counts as one undecodable record."""
    views: list[TraceView] = []
    for m in trace_messages:
        try:
            text = m.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            error = TraceDataError(f"trace message {m.msg_id} is not UTF-8: {exc}")
            if undecodable is None:
                raise error from exc
            undecodable.append(error)
            continue
        for ctx in decode_trace_data(text, errors=undecodable):
            if ctx.beans and _concerns(ctx.bean, msg_id):
                # the address only, as Java's getBornHostString (the port is the trace producer's
                # ephemeral one)
                views.append(TraceView(ctx, m.born_host.ip_text(), m.store_timestamp, m.msg_id))
    views.sort(key=lambda v: (v.time_ms, v.stored_ms))
    return views


class TraceAdmin:
    """AdminClient's trace query."""

    if TYPE_CHECKING:
        async def query_by_key(self, topic: str, key: str, *, max_count: int = 64, begin_ms: int = 0,
                               end_ms: int = ...) -> list[StoredMessage]: ...

        async def topic_list(self) -> list[str]: ...

    async def query_message_trace(self, msg_id: str, *, trace_topic: str | None = RMQ_SYS_TRACE_TOPIC,
                                  max_messages: int = TRACE_QUERY_MAX_MESSAGES) -> MessageTrace:
        """The trace of the message whose client id (UNIQ_KEY, SendResult.msg_id) is *msg_id*, from
        *trace_topic* (RMQ_SYS_TRACE_TOPIC unless the clients were given another).  NoRouteError when the
        trace topic does not exist (no client has traced to it).

        *trace_topic* None reads every trace topic the name servers know: RMQ_SYS_TRACE_TOPIC and the C++
        client 2.1's ``rmq_sys_TRACE_DATA_<region>`` ones (its producer and consumer take the region from
        different places, so one message's Pub and Sub records can land in two of them), merged oldest
        first; :attr:`MessageTrace.trace_topic` then names the topics read, joined by ``,``.  ClientError
        when none exists."""
        msg_id = msg_id.strip()
        if trace_topic is None:
            topics = [t for t in await self.topic_list() if t == RMQ_SYS_TRACE_TOPIC or t.startswith(CPP_TRACE_TOPIC_PREFIX)]
            if not topics:
                raise ClientError(f"no trace topic exists ({RMQ_SYS_TRACE_TOPIC} or {CPP_TRACE_TOPIC_PREFIX}*): "
                                  "no client has sent trace data")
        else:
            topics = [trace_topic]
        views: list[TraceView] = []
        undecodable: list[TraceDataError] = []
        for topic in topics:
            found = await self.query_by_key(topic, msg_id, max_count=max_messages)
            errors: list[TraceDataError] = []
            views.extend(trace_views(msg_id, found, errors))
            for error in errors:
                log.warning("%s: %s", topic, error)
            undecodable.extend(errors)
        views.sort(key=lambda v: (v.time_ms, v.stored_ms))
        return MessageTrace(msg_id, ",".join(topics), tuple(views), tuple(undecodable))
