"""``trace``: a message's trace (mqadmin queryMsgTraceById) from the trace topic.

    rocketstore trace MSG_ID [--trace-topic TOPIC] [--json]

MSG_ID is the client's message id (SendResult.msg_id, the UNIQ_KEY).  The table shows what mqadmin's
shows: the Pub (producer group, client host, send time, cost, status), then per consumer group its
handler calls (SubAfter: client host, time, cost, status); and, which mqadmin leaves out, the end of a
transaction (EndTransaction: state, whether it answered a check).  ``--json`` prints every record
(SubBefore too) with every field it carries.  Without ``-t`` every trace topic is read and merged:
RMQ_SYS_TRACE_TOPIC and the ``rmq_sys_TRACE_DATA_<region>`` topics the C++ client 2.1 writes to (its Pub
and Sub records of one message land in two of them); ``-t`` reads one topic (a client's custom one).
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketstore.cli.output import add_common, admin_of, format_time, print_json, print_table, run_command
from rocketstore.client.trace import CPP_TRACE_TOPIC_PREFIX, RMQ_SYS_TRACE_TOPIC, TraceType
from rocketstore.client.trace_query import MessageTrace, TraceView

__all__ = ["register", "view_json"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    trace = subparsers.add_parser("trace", help="show a message's trace (mqadmin queryMsgTraceById)")
    trace.add_argument("msg_id", metavar="MSG_ID", help="the client's message id (SendResult msgId, UNIQ_KEY)")
    trace.add_argument("-t", "--trace-topic", default=None,
                       help=f"the topic trace data went to (default: {RMQ_SYS_TRACE_TOPIC} and the C++ client's "
                            f"{CPP_TRACE_TOPIC_PREFIX}* topics, merged)")
    add_common(trace)
    trace.set_defaults(handler=_trace)


def view_json(view: TraceView) -> dict[str, Any]:
    """One record as JSON: Java's TraceView names where it has them, every field the record carried."""
    ctx, bean = view.context, view.bean
    out: dict[str, Any] = {
        "type": str(ctx.trace_type), "timestamp": ctx.timestamp_ms, "time": format_time(view.time_ms),
        "groupName": ctx.group, "regionId": ctx.region_id, "clientHost": view.client_host,
        "msgId": bean.msg_id, "keys": bean.keys,
        "traceMsgId": view.trace_msg_id, "traceStoreTimestamp": view.stored_ms,
    }
    t = ctx.trace_type
    if t in (TraceType.Pub, TraceType.SubAfter):  # the records that carry a cost and an outcome
        out.update({"costTime": ctx.cost_time_ms, "status": "success" if ctx.success else "failed",
                    "success": ctx.success})
    if t in (TraceType.Pub, TraceType.EndTransaction):
        out.update({"topic": bean.topic, "tags": bean.tags, "storeHost": bean.store_host,
                    "msgType": None if bean.msg_type is None else bean.msg_type.name})
    if t is TraceType.Pub:
        out.update({"offsetMsgId": bean.offset_msg_id, "bodyLength": bean.body_length})
    if t in (TraceType.SubBefore, TraceType.SubAfter):
        out["requestId"] = ctx.request_id
    if t is TraceType.SubBefore:
        out["retryTimes"] = bean.retry_times
    if t is TraceType.SubAfter:
        out["contextCode"] = ctx.context_code
    if t is TraceType.EndTransaction:
        out.update({"transactionId": bean.transaction_id, "transactionState": bean.transaction_state,
                    "fromTransactionCheck": bean.from_transaction_check})
    return out


def _print_views(trace: MessageTrace) -> None:
    """The tables mqadmin queryMsgTraceById prints, in our layout, plus the transaction's end."""
    pubs = [v for v in trace.views if v.context.trace_type is TraceType.Pub]
    ends = [v for v in trace.views if v.context.trace_type is TraceType.EndTransaction]
    by_group: dict[str, list[TraceView]] = {}
    for v in trace.views:
        if v.context.trace_type is TraceType.SubAfter:
            by_group.setdefault(v.context.group or "", []).append(v)
    if not (pubs or ends or by_group):
        print(f"no trace of {trace.msg_id} in {trace.trace_topic}")
    if pubs:
        print_table(["#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"],
                    [["Pub", v.context.group or "", v.client_host, format_time(v.time_ms),
                      f"{v.context.cost_time_ms}ms", "success" if v.context.success else "failed"] for v in pubs])
        print()
    if ends:
        print_table(["#Type", "#ProducerGroup", "#ClientHost", "#Time", "#State", "#FromCheck"],
                    [["EndTransaction", v.context.group or "", v.client_host, format_time(v.time_ms),
                      v.bean.transaction_state or "", str(v.bean.from_transaction_check).lower()] for v in ends])
        print()
    for group, views in by_group.items():
        print_table(["#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"],
                    [["Sub", group, v.client_host, format_time(v.time_ms), f"{v.context.cost_time_ms}ms",
                      "success" if v.context.success else "failed"] for v in views])
        print()
    if trace.undecodable:
        print(f"({len(trace.undecodable)} record(s) in {trace.trace_topic} could not be decoded)")


def _trace(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            trace = await admin.query_message_trace(args.msg_id, trace_topic=args.trace_topic)
        if args.json:
            print_json({"msgId": trace.msg_id, "traceTopic": trace.trace_topic,
                        "traces": [view_json(v) for v in trace.views],
                        "undecodable": [str(e) for e in trace.undecodable]})
        else:
            _print_views(trace)
        return 0

    return run_command(go())
