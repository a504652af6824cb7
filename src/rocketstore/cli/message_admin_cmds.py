"""Reads of message queues (mqadmin queryMsgByOffset, printMsgByQueue, printMsg), added to admin_cmds'
``message`` command:

    rocketstore message by-offset -t TOPIC -b BROKER -i QUEUE_ID -o OFFSET [--full-body]
    rocketstore message print-queue -t TOPIC -b BROKER -i QUEUE_ID [--begin T | --begin-offset N]
                                    [--end T | --end-offset N] [-s 'TagA || TagB'] [--tags-stats] [--max N]
    rocketstore message print -t TOPIC [--begin T] [--end T] [-s 'TagA || TagB'] [--max N]

BROKER is the broker's name (as mqadmin takes it) or its master's HOST:PORT.  ``print-queue`` lists one line
per message (queue offset, ids, tags, keys, store time, the start of the body); ``--tags-stats`` adds how many
messages carry each tag, most frequent first (mqadmin's ``-f true``); its last line names the range of queue
offsets it read over, both ends included (``0 .. 2``), as ``by-offset`` names those a queue holds.  ``print``
does the same over every readable queue of the topic (mqadmin printMsg; consumeMessage without -b), nothing
committed, --max counting all queues together.  Parse arguments, call one AdminClient method, print.
"""

from __future__ import annotations

import argparse

from rocketstore.cli.output import (
    add_common,
    admin_of,
    body_text,
    fail,
    format_time,
    message_json,
    offset_range,
    parse_time_ms,
    print_json,
    print_message,
    print_table,
    run_command,
)
from rocketstore.message.record import StoredMessage

__all__ = ["add_message_commands"]

#: body characters a print-queue line shows without --full-body
LINE_BODY_CHARS = 48
DEFAULT_MAX_MESSAGES = 1000


def _queue_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="the queue's topic")
    parser.add_argument("-b", "--broker", required=True, help="broker name, or its master's HOST:PORT")
    parser.add_argument("-i", "--queue-id", type=int, required=True, help="the queue's id on that broker")


def add_message_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    by_offset = commands.add_parser("by-offset", help="the message at a queue offset (mqadmin queryMsgByOffset)")
    _queue_args(by_offset)
    by_offset.add_argument("-o", "--offset", type=int, required=True, help="the queue offset")
    add_common(by_offset, full_body=True)
    by_offset.set_defaults(handler=_by_offset)

    queue = commands.add_parser("print-queue", help="a queue's messages between two times or offsets, their tags "
                                                    "counted with --tags-stats (mqadmin printMsgByQueue)")
    _queue_args(queue)
    begin = queue.add_mutually_exclusive_group()
    begin.add_argument("--begin", metavar="TIME", help="from the message stored nearest TIME, which may be stored "
                                                       "before it (the broker's search by time, as mqadmin; ms "
                                                       "since the epoch, ISO 8601 or yyyy-MM-dd#HH:mm:ss:SSS; "
                                                       "default: the first kept)")
    begin.add_argument("--begin-offset", type=int, metavar="N", help="from queue offset N")
    end = queue.add_mutually_exclusive_group()
    end.add_argument("--end", metavar="TIME", help="up to the last message stored at or before TIME, read on "
                                                   "from the one stored nearest TIME (found as --begin's): a TIME "
                                                   "past the last message reads to the queue's end, that last one "
                                                   "included, as in mqadmin (default: the queue's end)")
    end.add_argument("--end-offset", type=int, metavar="N", help="up to (not including) queue offset N")
    queue.add_argument("-s", "--sub-expression", default="*", help="only these tags ('TagA || TagB'; default *)")
    queue.add_argument("--tags-stats", action="store_true", help="count the messages of each tag")
    queue.add_argument("--max", type=int, default=DEFAULT_MAX_MESSAGES,
                       help=f"at most this many messages (default {DEFAULT_MAX_MESSAGES})")
    add_common(queue, full_body=True)
    queue.set_defaults(handler=_print_queue)

    topic = commands.add_parser("print", help="every readable queue's messages of a topic between two times, "
                                              "nothing committed (mqadmin printMsg)")
    topic.add_argument("-t", "--topic", required=True, help="the topic to print")
    topic.add_argument("--begin", metavar="TIME", help="in each queue from the message stored nearest TIME, "
                                                       "as print-queue's --begin (default: the first kept)")
    topic.add_argument("--end", metavar="TIME", help="in each queue up to the last message stored at or before "
                                                     "TIME, as print-queue's --end (default: the end)")
    topic.add_argument("-s", "--sub-expression", default="*", help="only these tags ('TagA || TagB'; default *)")
    topic.add_argument("--max", type=int, default=DEFAULT_MAX_MESSAGES,
                       help=f"at most this many messages, all queues together (default {DEFAULT_MAX_MESSAGES})")
    add_common(topic, full_body=True)
    topic.set_defaults(handler=_print_topic)


def _by_offset(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            message = await admin.message_by_offset(args.topic, args.broker, args.queue_id, args.offset)
        if args.json:
            print_json(message_json(message, args.full_body))
        else:
            print_message(message, args.full_body)
        return 0

    return run_command(go())


def _line_body(m: StoredMessage, full_body: bool) -> str:
    """The body as one table cell: cut to LINE_BODY_CHARS unless *full_body*, line breaks made spaces (one
    row per message, also when read line by line)."""
    text, _, truncated = body_text(m.body, full_body)
    if not full_body and len(text) > LINE_BODY_CHARS:
        text, truncated = text[:LINE_BODY_CHARS], True
    return text.replace("\n", " ").replace("\r", " ") + ("..." if truncated else "")


def _read_bounds(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """print / print-queue's --begin and --end as ms (None: not given), --max checked; ValueError with the
    line to print."""
    if args.max < 1:
        raise ValueError("--max must be at least 1")
    try:
        begin_ms = parse_time_ms(args.begin, -1) if args.begin is not None else None
        end_ms = parse_time_ms(args.end, -1) if args.end is not None else None
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None
    return begin_ms, end_ms


def _print_topic(args: argparse.Namespace) -> int:
    try:
        begin_ms, end_ms = _read_bounds(args)
    except ValueError as exc:
        return fail(str(exc))

    async def go() -> int:
        async with admin_of(args) as admin:
            queues = await admin.topic_messages(args.topic, begin_ms=begin_ms, end_ms=end_ms,
                                                expression=args.sub_expression, max_count=args.max)
        if args.json:
            print_json({
                "topic": args.topic,
                "queues": [{"brokerName": q.queue.broker_name, "queueId": q.queue.queue_id,
                            "beginOffset": q.begin_offset, "endOffset": q.end_offset, "nextOffset": q.next_offset}
                           for q in queues],
                "messages": [dict(message_json(m, args.full_body), brokerName=q.queue.broker_name)
                             for q in queues for m in q.messages]})
            return 0
        rows = [(q.queue.broker_name, m.queue_id, m.queue_offset, m.uniq_key or m.msg_id, m.tags or "-",
                 m.keys or "-", format_time(m.store_timestamp), _line_body(m, args.full_body))
                for q in queues for m in q.messages]
        print_table(["BROKER", "QUEUE", "OFFSET", "MSG ID", "TAGS", "KEYS", "STORED", "BODY"], rows, right=(1, 2))
        count = len(rows)
        cut = " (stopped at --max)" if count >= args.max and any(q.next_offset < q.end_offset for q in queues) else ""
        print(f"{count} message(s) of {args.topic} from {len(queues)} queue(s){cut}")
        return 0

    return run_command(go())


def _print_queue(args: argparse.Namespace) -> int:
    try:
        begin_ms, end_ms = _read_bounds(args)
    except ValueError as exc:
        return fail(str(exc))

    async def go() -> int:
        async with admin_of(args) as admin:
            found = await admin.queue_messages(args.topic, args.broker, args.queue_id, begin_offset=args.begin_offset,
                                               end_offset=args.end_offset, begin_ms=begin_ms, end_ms=end_ms,
                                               expression=args.sub_expression, max_count=args.max)
        mq = found.queue
        if args.json:
            out: dict[str, object] = {
                "topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id,
                "beginOffset": found.begin_offset, "endOffset": found.end_offset, "nextOffset": found.next_offset,
                "messages": [message_json(m, args.full_body) for m in found.messages]}
            if args.tags_stats:
                out["tagCounts"] = found.tag_counts
            print_json(out)
            return 0
        rows = []
        for m in found.messages:
            rows.append((m.queue_offset, m.uniq_key or m.msg_id, m.tags or "-", m.keys or "-",
                         format_time(m.store_timestamp), _line_body(m, args.full_body)))
        print_table(["OFFSET", "MSG ID", "TAGS", "KEYS", "STORED", "BODY"], rows, right=(0,))
        cut = " (stopped at --max)" if found.next_offset < found.end_offset and len(found.messages) >= args.max else ""
        print(f"{len(found.messages)} message(s) of {mq.topic} queue {mq.queue_id} on {mq.broker_name}, queue "
              f"offsets {offset_range(found.begin_offset, found.end_offset)}{cut}")
        if args.tags_stats:
            print()
            print_table(["TAG", "COUNT"], list(found.tag_counts.items()), right=(1,))
        return 0

    return run_command(go())
