"""``send``, ``request`` and ``consume``: a producer, a requesting producer and a pull consumer from the
command line (client.Producer, client.RequestProducer and client.PullConsumer).

    rocketstore send TOPIC BODY [--tags T] [--keys K] [--property k=v ...] [--delay-level N] [--count N]
                                [--queue Q] [--broker B] [--trace] [--group G]
    rocketstore request TOPIC BODY [--tags T] [--keys K] [--property k=v ...] [--timeout S] [--group G]
    rocketstore consume TOPIC --group G [--tags 'A || B' | --sql EXPR] [--from first|last] [--max N] [--timeout S]
                                [--reply BODY]

``send`` prints one row per send result; in BODY and --keys, ``{i}`` becomes the message's number
(0..count-1).  ``BODY`` ``-`` reads the body from stdin.  ``--broker`` sends to that broker's queues only:
to queue --queue of it (mqadmin sendMessage -b -i, Java's send(msg, mq): one try), else to its writable
queues in turn; ``--trace`` records each send's trace (mqadmin's -m true).  ``consume`` pulls every queue
of the topic with long polling, from the group's committed offsets (a queue without one starts at its first or last
message, --from), prints each message, commits what it printed, and stops after --max messages or when
none has come for --timeout seconds (Ctrl-C: exit status 130, with --json after printing the messages
consumed and the offsets committed by then).  --json prints one document at the end, so it commits the
offsets of its messages only once the document is out: a run whose output is lost (``| head``, a crash)
commits none of them and the next run prints them again.  ``request`` sends one request message (RocketMQ's
request/reply) and prints the reply, or fails after --timeout seconds; ``consume --reply BODY`` answers each
request message it prints with BODY (``{body}`` becomes the request's body), so the two make a round trip
from two shells.  Errors print one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from rocketstore.cli.output import (
    add_common,
    body_text,
    credentials_of,
    fail,
    message_json,
    positive_seconds,
    print_json,
    print_table,
    run_command,
)
from rocketstore.client import (
    MessageQueue,
    MessageSelector,
    Producer,
    PullConsumer,
    PullStatus,
    ReplyTimeoutError,
    RequestProducer,
    RequestSendError,
)
from rocketstore.client.admin import AdminClient, InvalidNameError, NoConsumeProgressError, check_name
from rocketstore.client.consumer import subscription_for
from rocketstore.client.errors import ClientError
from rocketstore.client.namespace import with_namespace
from rocketstore.errors import RocketStoreError
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import StoredMessage
from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql

__all__ = ["register"]

#: how long one pull may be held by the broker: bounds how late a stop takes effect
PULL_SUSPEND_MS = 1000


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    send = subparsers.add_parser("send", help="send messages and print the send results")
    send.add_argument("topic")
    _add_message_args(send, "message body ('-': read stdin); {i} becomes the message number",
                      "keys, separated by spaces; {i} becomes the message number")
    send.add_argument("--delay-level", type=int, default=0, help="delay level (1 = 1s, 2 = 5s, 3 = 10s, ...)")
    send.add_argument("--count", type=int, default=1, help="how many messages (default 1)")
    send.add_argument("--queue", type=int, help="send to this queue id only")
    send.add_argument("-b", "--broker", help="send to this broker only (its name): to queue --queue of it, "
                                             "else to its writable queues in turn")
    send.add_argument("--trace", action="store_true", help="record each send's message trace (mqadmin "
                                                           "sendMessage -m true; see the trace command)")
    send.add_argument("--group", default="rocketstore-cli-producer", help="producer group")
    _add_namespace_arg(send)
    add_common(send)
    send.set_defaults(handler=_send)

    request = subparsers.add_parser("request", help="send a request message and print its reply (request/reply)")
    request.add_argument("topic")
    _add_message_args(request, "request body ('-': read stdin)", "keys, separated by spaces")
    request.add_argument("--timeout", type=positive_seconds, default=3.0,
                         help="seconds to wait for the reply (default 3)")
    request.add_argument("--group", default="rocketstore-cli-requester", help="producer group")
    add_common(request, full_body=True)
    request.set_defaults(handler=_request)

    consume = subparsers.add_parser("consume", help="pull messages as a group, print them, commit offsets")
    consume.add_argument("topic")
    consume.add_argument("-g", "--group", required=True, help="consumer group (its offsets are committed)")
    selector = consume.add_mutually_exclusive_group()
    selector.add_argument("--tags", default="*", help="tag expression, e.g. 'TagA || TagB' (default *)")
    selector.add_argument("--sql", help="SQL92 expression over message properties instead of tags, e.g. "
                                        "\"region = 'eu' AND amount > 100\" (the broker needs enablePropertyFilter=true)")
    consume.add_argument("--from", dest="start", choices=("first", "last"), default="first",
                         help="where a queue without a committed offset starts (default first; last commits "
                              "that end at once, so a later run goes on from it)")
    consume.add_argument("--max", type=int, help="stop after this many messages")
    _add_namespace_arg(consume)
    consume.add_argument("--timeout", type=_idle_seconds, default=5.0,
                         help="stop when no message came for this many seconds (default 5; inf: never, until "
                              "Ctrl-C, after which --json still prints what was consumed and committed)")
    consume.add_argument("--reply", metavar="BODY",
                         help="answer each request message with BODY ({body}: the request's body)")
    add_common(consume, full_body=True)
    consume.set_defaults(handler=_consume)


def _add_namespace_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", help="the client's namespace (Java's ClientConfig.namespace): the "
                                            "topic and group are <namespace>%%<name> on the brokers")


def _add_message_args(parser: argparse.ArgumentParser, body_help: str, keys_help: str) -> None:
    """BODY, --tags, --keys and --property: what ``send`` and ``request`` put in a message."""
    parser.add_argument("body", help=body_help)
    parser.add_argument("--tags", help="the message tag")
    parser.add_argument("--keys", help=keys_help)
    parser.add_argument("--property", action="append", default=[], metavar="K=V", help="a user property (repeatable)")


# --- send ----------------------------------------------------------------------------------------------------


def _properties(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--property wants KEY=VALUE, not {pair!r}")
        out[key] = value
    return out


def _send(args: argparse.Namespace) -> int:
    try:
        properties = _properties(args.property)
        check_name("topic", args.topic)
        check_name("group", args.group)  # as the Java producer checks its group when it starts
    except (ValueError, InvalidNameError) as exc:
        return fail(str(exc))
    if args.count < 1:
        return fail("--count must be at least 1")
    if args.delay_level < 0:
        return fail("--delay-level must be 0 (none) or a level from 1")
    if args.delay_level:
        properties[PropertyName.DELAY] = str(args.delay_level)
    body_template = sys.stdin.buffer.read() if args.body == "-" else _argv_bytes(args.body)

    def on_broker(queues: list[MessageQueue], i: object) -> MessageQueue:
        """--broker's queue for message *i*: queue --queue of the broker, else its publish queues in turn
        (a queue the topic's route lacks is refused as a plain send's --queue is: QueueNotInRouteError)."""
        if args.queue is not None:
            return MessageQueue(args.topic, args.broker, args.queue)
        mine = [mq for mq in queues if mq.broker_name == args.broker]
        if not mine:
            raise ClientError(f"topic {args.topic!r} has no writable queue on broker {args.broker!r} (it has: "
                              f"{', '.join(sorted({mq.broker_name for mq in queues}))})")
        assert isinstance(i, int)  # the message's number, passed as the sharding key
        return mine[i % len(mine)]

    async def go() -> int:
        results = []
        async with Producer(args.namesrv, args.group, timeout_s=args.request_timeout_s,
                            credentials=credentials_of(args), enable_trace=args.trace,
                            namespace=args.namespace) as producer:
            for i in range(args.count):
                body = body_template.replace(b"{i}", str(i).encode())
                keys = args.keys.replace("{i}", str(i)) if args.keys else None
                if args.broker is not None:
                    results.append(await producer.send_orderly(args.topic, body, i, tags=args.tags, keys=keys,
                                                               properties=properties, selector=on_broker))
                else:
                    results.append(await producer.send(args.topic, body, tags=args.tags, keys=keys,
                                                       properties=properties, queue_id=args.queue))
        if args.json:
            print_json([{"status": r.status, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
                         "topic": r.message_queue.topic, "brokerName": r.message_queue.broker_name,
                         "queueId": r.message_queue.queue_id, "queueOffset": r.queue_offset} for r in results])
            return 0
        print_table(["#", "STATUS", "MSG ID", "OFFSET MSG ID", "BROKER", "QID", "QUEUE OFFSET"],
                    [(i, r.status, r.msg_id, r.offset_msg_id, r.message_queue.broker_name, r.message_queue.queue_id,
                      r.queue_offset) for i, r in enumerate(results)], right=(0, 5, 6))
        return 0

    return run_command(go())


def _argv_bytes(text: str) -> bytes:
    """A body given on the command line as the bytes the shell passed: UTF-8 text as UTF-8, and bytes that are
    not UTF-8 (which Python decodes to lone surrogates) unchanged, not a UnicodeEncodeError."""
    return text.encode("utf-8", "surrogateescape")


# --- request -------------------------------------------------------------------------------------------------


def _request(args: argparse.Namespace) -> int:
    try:
        properties = _properties(args.property)
        check_name("topic", args.topic)
        check_name("group", args.group)
    except (ValueError, InvalidNameError) as exc:
        return fail(str(exc))
    if args.timeout <= 0:
        return fail("--timeout must be positive")
    body = sys.stdin.buffer.read() if args.body == "-" else _argv_bytes(args.body)

    async def go() -> int:
        async with RequestProducer(args.namesrv, args.group, timeout_s=args.request_timeout_s,
                                   credentials=credentials_of(args)) as requester:
            try:
                reply = await requester.request(args.topic, body, timeout_s=args.timeout, tags=args.tags,
                                                keys=args.keys, properties=properties)
            except ReplyTimeoutError as exc:
                return fail(str(exc))
            except RequestSendError as exc:  # Java's message, then the send's error (its "Caused by")
                return fail(f"{exc}: {exc.__cause__}")
        text, encoding, truncated = body_text(reply.body, args.full_body)
        if args.json:
            print_json({"topic": reply.topic, "correlationId": reply.correlation_id, "bornHost": reply.born_host,
                        "storeHost": reply.store_host, "properties": reply.properties, "body": text,
                        "bodyEncoding": encoding, "bodyTruncated": truncated})
        else:
            print(text + (" ..." if truncated else "") + (" (base64)" if encoding == "base64" else ""))
        return 0

    return run_command(go())


# --- consume -------------------------------------------------------------------------------------------------


class _Consumption:
    """The state the per-queue pull loops share (all on one event loop, so no locks)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.messages: list[StoredMessage] = []
        self.committed: dict[MessageQueue, int] = {}
        #: with --json: the offsets to commit once the document naming their messages is out
        self.unprinted: dict[MessageQueue, int] = {}
        #: with --json: the document has been printed (Ctrl-C after it prints no second one)
        self.printed = False
        self.last_message_at = time.monotonic()
        self.stop = asyncio.Event()
        #: with --reply: the producer that answers request messages
        self.replier: Producer | None = None
        #: the pull loops waiting on a pull (a long poll of up to PULL_SUSPEND_MS): at the end these are
        #: cancelled, not waited for, as a pull in flight has taken and committed nothing
        self.pulling: set[asyncio.Task[Any]] = set()

    def take(self, batch: list[StoredMessage]) -> list[StoredMessage]:
        """As many of *batch* as the limit still allows, counted at once (before any await)."""
        if self.limit is not None:
            batch = batch[: max(0, self.limit - len(self.messages))]
        self.messages.extend(batch)
        if batch:
            self.last_message_at = time.monotonic()
        if self.limit is not None and len(self.messages) >= self.limit:
            self.stop.set()
        return batch


def _idle_seconds(text: str) -> float:
    """consume's --timeout (argparse type): seconds above 0, ``inf`` for a consumer (a responder) that runs
    until Ctrl-C; not NaN, which no timer takes."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (or inf), not {text!r}")
    return value


def _consume(args: argparse.Namespace) -> int:
    if args.max is not None and args.max < 1:
        return fail("--max must be at least 1")
    try:
        check_name("topic", args.topic)
        check_name("group", args.group)
    except InvalidNameError as exc:
        return fail(str(exc))
    # the names on the brokers (the messages print with them)
    args.topic = with_namespace(args.namespace, args.topic)
    args.group = with_namespace(args.namespace, args.group)
    if args.sql is not None:
        # before anything is pulled: an empty --sql must not read as "no filter" (everything consumed and
        # committed), and a malformed one is best told where, which the broker's pull refusal does not say
        try:
            compile_sql(args.sql)
        except SqlSyntaxError as exc:
            return fail(f"--sql: {exc}")
    else:
        # a tag expression of separators only ('||') names no tag, as 4.9.3's subscribe refuses it: told here
        # in the usual words, not as the traceback of the first pull's refusal
        try:
            subscription_for(args.topic, args.tags)
        except ValueError as exc:
            return fail(f"--tags: {exc}")

    def consumed_json(state: _Consumption) -> dict[str, object]:
        return {"group": args.group, "topic": args.topic,
                "messages": [message_json(m, args.full_body) for m in state.messages],
                "committed": [{"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": offset}
                              for mq, offset in sorted({**state.committed, **state.unprinted}.items())]}

    async def print_then_commit(consumer: PullConsumer, state: _Consumption) -> None:
        # --json: the document first (flushed: a reader gone raises here), then the offsets it names as
        # committed; a write that fails commits none of them (at-least-once), as the table commits a message
        # only once its line is printed
        state.printed = True
        print_json(consumed_json(state))
        sys.stdout.flush()
        for mq, offset in sorted(state.unprinted.items()):
            await consumer.commit_offset(mq, offset)
            state.committed[mq] = offset
        state.unprinted.clear()

    async def go() -> int:
        state = _Consumption(args.max)
        try:
            return await consume(state)
        except asyncio.CancelledError:
            # Ctrl-C: with --json the messages consumed so far are printed all the same, as the table prints
            # each one as it comes; else a script's output had none of them.  (Once the pulls have begun the
            # document is printed, and its offsets committed, before the consumer closes.)
            if args.json and not state.printed:
                print_json(consumed_json(state))
            raise

    async def consume(state: _Consumption) -> int:
        if args.reply is not None:
            state.replier = Producer(args.namesrv, f"{args.group}-replier", timeout_s=args.request_timeout_s,
                                     credentials=credentials_of(args))
        async with PullConsumer(args.namesrv, args.group, timeout_s=args.request_timeout_s,
                                credentials=credentials_of(args)) as consumer:
            queues = await consumer.queues(args.topic)
            if not queues:
                # every broker of the route forbids reads (perm 2: brokerPermission or updateTopicPerm);
                # Java's fetchSubscribeMessageQueues fails here too ("Can not find Message Queue for this topic")
                if state.replier is not None:
                    await state.replier.close()
                raise ClientError(f"topic {args.topic!r} has no readable queue: the perm of each of its brokers "
                                  "forbids reads")
            starts = await _start_offsets(args, consumer, queues, state)
            loops = [asyncio.ensure_future(_pull_loop(consumer, mq, starts[mq], args, state)) for mq in queues]
            try:
                try:
                    while not state.stop.is_set():
                        idle = args.timeout - (time.monotonic() - state.last_message_at)
                        if idle <= 0:
                            break
                        try:
                            async with asyncio.timeout(idle):
                                await state.stop.wait()
                        except TimeoutError:
                            pass
                finally:
                    state.stop.set()
                    for pulling in state.pulling:  # Ctrl-C, --max or --timeout: no need to wait out a long poll
                        pulling.cancel()
                    results = await asyncio.gather(*loops, return_exceptions=True)
                    if state.replier is not None:
                        await state.replier.close()
            except asyncio.CancelledError:
                if args.json:
                    await print_then_commit(consumer, state)
                raise
            errors = [r for r in results
                      if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
            if errors:
                raise errors[0]
            if args.json:
                await print_then_commit(consumer, state)
        if not args.json:
            print(f"consumed {len(state.messages)} message(s) from {args.topic} as {args.group}; committed "
                  + (", ".join(f"{mq.broker_name}/{mq.queue_id}={o}" for mq, o in sorted(state.committed.items()))
                     or "nothing"))
        return 0

    return run_command(go())


async def _start_offsets(args: argparse.Namespace, consumer: PullConsumer,
                         queues: list[MessageQueue], state: _Consumption) -> dict[MessageQueue, int]:
    """The group's committed offsets; --from for a topic the group never committed on.  A queue started at
    its end (--from last) has that end committed at once, as a Java consumer from CONSUME_FROM_LAST_OFFSET
    stores it after its first pull finds nothing: else the next run would start at the end again and skip
    what was sent meanwhile.

    The committed offsets come from the broker's consume stats, which list only the topics a group has
    offsets for: QUERY_CONSUMER_OFFSET cannot tell, as a broker answers 0 for a queue the group never
    committed on while the queue's first message is still in memory (RocketMQ's rule for new groups).
    """
    async with AdminClient(args.namesrv, timeout_s=args.request_timeout_s,
                           credentials=credentials_of(args)) as admin:
        try:
            progress = await admin.consume_progress(args.group, None)
        except NoConsumeProgressError:  # a new group
            rows = {}
        else:
            rows = {(q.broker_name, q.queue_id): q.consumer_offset for q in progress.queues if q.topic == args.topic}
    starts = {}
    for mq in queues:
        committed = rows.get((mq.broker_name, mq.queue_id))
        if committed is None:
            if args.start == "first":
                committed = await consumer.min_offset(mq)
            else:
                committed = await consumer.max_offset(mq)
                await consumer.commit_offset(mq, committed)
                state.committed[mq] = committed
        starts[mq] = committed
    return starts


async def _pull_loop(consumer: PullConsumer, mq: MessageQueue, offset: int, args: argparse.Namespace,
                     state: _Consumption) -> None:
    try:
        await _pull_queue(consumer, mq, offset, args, state)
    except BaseException:
        state.stop.set()  # one queue failing (broker gone, ...) ends the whole run with its error
        raise


async def _pull_queue(consumer: PullConsumer, mq: MessageQueue, offset: int, args: argparse.Namespace,
                      state: _Consumption) -> None:
    selector = MessageSelector.by_sql(args.sql) if args.sql else MessageSelector.by_tag(args.tags)
    task = asyncio.current_task()
    assert task is not None
    while not state.stop.is_set():
        state.pulling.add(task)
        try:
            result = await consumer.pull(mq, offset, 32, expression=selector, suspend_ms=PULL_SUSPEND_MS)
        finally:
            state.pulling.discard(task)
        if result.status == PullStatus.OFFSET_ILLEGAL:
            offset = result.next_begin_offset
            continue
        taken = state.take(result.messages)
        for m in taken:
            if not args.json:
                # a reader gone (``| head``) raises BrokenPipeError here: the batch in hand stays uncommitted
                # (the lines written into the pipe may never have been read: at-least-once)
                _print_line(m, args.full_body)
            if state.replier is not None and m.properties.get(PropertyName.REPLY_TO_CLIENT):
                try:
                    await state.replier.send_reply(m, _argv_bytes(args.reply).replace(b"{body}", m.body))
                except (RocketStoreError, TimeoutError, ValueError) as exc:
                    # e.g. a request whose requester has gone ("channel ... not found"): later ones still get
                    # answers, as a Java responder's catch around its send goes on
                    print(f"rocketstore: warning: no reply to request {m.uniq_key or m.msg_id}: {exc}",
                          file=sys.stderr, flush=True)
        if len(taken) < len(result.messages):
            next_offset = taken[-1].queue_offset + 1 if taken else offset
        else:
            next_offset = result.next_begin_offset
        if next_offset != offset:
            offset = next_offset
            if args.json:  # committed once the document listing these messages is printed
                state.unprinted[mq] = offset
            else:
                await consumer.commit_offset(mq, offset)
                state.committed[mq] = offset


def _print_line(m: StoredMessage, full_body: bool) -> None:
    text, encoding, truncated = body_text(m.body, full_body)
    body = (text.replace("\n", "\\n").replace("\r", "\\r") + (" ..." if truncated else "")
            + (" (base64)" if encoding == "base64" else ""))
    print(f"q{m.queue_id}@{m.queue_offset}  {m.uniq_key or m.msg_id}  tags={m.tags or '-'}  keys={m.keys or '-'}  "
          f"reconsume={m.reconsume_times}  {body}", flush=True)
