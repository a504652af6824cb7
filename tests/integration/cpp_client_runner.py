"""Drive the official RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4, librocketmq 1.x) in its own process.

The C++ client spawns threads and does not always shut down cleanly, so tests run it here, in a
subprocess they can kill, and talk to it in JSON lines on stdout:

    python cpp_client_runner.py produce NAMESRV TOPIC GROUP COUNT [--batch N] [--tags A,B] [--delay LEVEL] [--first I]
                                                        [--pad N] [--mode sync|oneway|orderly|async] [--prop K=V]...
        one {"i", "status", "msg_id", "offset", "t"} line per send, then {"done": true}; --mode oneway sends with
        send_oneway (status "ONEWAY", no id), --mode orderly with send_orderly(msg, i) (the wheel's hashing
        selector: queue i % queue count), --mode async with send_async: all COUNT sends are issued, then each
        callback writes its line (in callback order; status "EXCEPTION" and "exception" from the exception
        callback) and {"done": true} follows once every callback has run; --prop K=V (repeatable) sets a user
        property on every message (set_property), "{i}" in V replaced by the message's number; --mode
        oneway-orderly sends with send_oneway_orderly(msg, i) (status "ONEWAY"); --raw-tail HEX sets the body
        with SetByteMessageBody to the body's UTF-8 plus the bytes HEX (NULs included); --noise N appends N
        seeded random letters (a body zlib cannot shrink much)
    python cpp_client_runner.py consume NAMESRV TOPIC GROUP [EXPRESSION] [--fail-first | --fail-always] [--orderly]
                                                            [--broadcast] [--props K1,K2]
        {"started": true}, then one {"body", "tags", "keys", "id", "queue_id", "queue_offset", "topic",
        "reconsume_times", "store_size", "born_timestamp", "store_timestamp", "commit_log_offset",
        "delay_time_level", "prepared_transaction_offset", "t", "failed"} line per delivery; with --fail-first
        the first delivery of each body raises (RECONSUME_LATER), with --fail-always every delivery does;
        --broadcast consumes in MessageModel.BROADCASTING; --props adds "props": {K: get_property(K)} to each
        line; a "stop" line (or EOF) on stdin shuts the consumer down, then {"shutdown": true}
    python cpp_client_runner.py pull NAMESRV TOPIC GROUP [EXPRESSION] [--max N] [--props K1,K2] [--from N]
        the C++ PullConsumer: pull(topic, EXPRESSION, N) walks every queue from offset 0 (or N) to its end; one line
        per message as consume writes them (no "failed"), then {"done": true}

With RMQ_ACCESS_KEY / RMQ_SECRET_KEY (and RMQ_CHANNEL) in the environment, producer and consumer sign their
requests (set_session_credentials), as against a broker with aclEnable.  A NAMESRV starting with "http://" is
a name server address URL (set_namesrv_domain: the client fetches the address list from it).  Client settings
from the environment, each only when set: RMQ_INSTANCE_NAME (producer and push consumer), RMQ_LOG_PATH (0.4.4's
library ignores it: it logs to $HOME/logs/rocketmq-cpp all the same) and RMQ_LOG_LEVEL (0-6, every client),
RMQ_SEND_TIMEOUT_MS, RMQ_COMPRESS_LEVEL and RMQ_MAX_MESSAGE_SIZE (producer),
RMQ_THREAD_COUNT and RMQ_BATCH_MAX (push consumer: set_thread_count, set_message_batch_max_size),
RMQ_COMPRESS_OVER (producer: SetProducerCompressMsgBodyOverHowmuch, bodies longer than it are compressed).

Message i has body ``body-i ünï`` (plus a space and N "x" with --pad N), key ``key-i`` and tag TAGS[i % len(TAGS)].  Exits with os._exit so a
hanging C++ destructor cannot keep the process alive.  The C++ client logs to $HOME/logs/rocketmq-cpp:
tests point HOME at a temporary directory.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from runner_lines import body_of, emit, flag_pairs, run_main


def _text(value: object) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _credentials(client) -> None:  # type: ignore[no-untyped-def]
    access_key = os.environ.get("RMQ_ACCESS_KEY")
    if access_key is not None:
        client.set_session_credentials(access_key, os.environ.get("RMQ_SECRET_KEY", ""),
                                       os.environ.get("RMQ_CHANNEL", ""))


def _settings(client, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Apply the RMQ_* client settings of the environment (see the module docstring) to *client*, whose
    C API prefix *kind* is "Producer", "PushConsumer" or "PullConsumer"."""
    from rocketmq.ffi import dll

    env = os.environ
    handle = client._handle
    if "RMQ_INSTANCE_NAME" in env:
        name = env["RMQ_INSTANCE_NAME"]
        if kind == "Producer":
            dll.SetProducerInstanceName(handle, name.encode())
        elif kind == "PushConsumer":
            client.set_instance_name(name)
    if "RMQ_LOG_PATH" in env:
        getattr(dll, f"Set{kind}LogPath")(handle, env["RMQ_LOG_PATH"].encode())
        getattr(dll, f"Set{kind}LogFileNumAndSize")(handle, 3, 1 << 20)
    if "RMQ_LOG_LEVEL" in env:
        getattr(dll, f"Set{kind}LogLevel")(handle, int(env["RMQ_LOG_LEVEL"]))
    if "RMQ_COMPRESS_OVER" in env and kind == "Producer":  # in the library, not declared by the wheel
        import ctypes
        over = ctypes.c_int(int(env["RMQ_COMPRESS_OVER"]))
        dll.SetProducerCompressMsgBodyOverHowmuch(ctypes.c_void_p(handle), over)
    for variable, setter in (("RMQ_SEND_TIMEOUT_MS", "set_timeout"), ("RMQ_COMPRESS_LEVEL", "set_compress_level"),
                             ("RMQ_MAX_MESSAGE_SIZE", "set_max_message_size"), ("RMQ_THREAD_COUNT", "set_thread_count"),
                             ("RMQ_BATCH_MAX", "set_message_batch_max_size")):
        if variable in env and hasattr(client, setter):
            getattr(client, setter)(int(env[variable]))


def _name_server(client, namesrv: str) -> None:  # type: ignore[no-untyped-def]
    if namesrv.startswith("http://"):
        client.set_namesrv_domain(namesrv)
    else:
        client.set_namesrv_addr(namesrv)


def produce(namesrv: str, topic: str, group: str, count: int, tags: list[str], batch: int, delay: int,
            first: int, pad: int, mode: str = "sync", props: dict[str, str] | None = None, raw_tail: str = "",
            noise: int = 0) -> None:
    from rocketmq.client import Message, Producer
    from rocketmq.ffi import dll

    producer = Producer(group)
    _name_server(producer, namesrv)
    _credentials(producer)
    _settings(producer, "Producer")
    producer.start()
    try:
        def make(i: int) -> Message:
            msg = Message(topic)
            msg.set_keys(f"key-{i}")
            msg.set_tags(tags[i % len(tags)])
            msg.set_body(body_of(i) + " " + "x" * pad if pad else body_of(i))
            if noise:
                import random
                msg.set_body(body_of(i) + " " + "".join(random.Random(i).choices("abcdefghijklmnopqrstuvwxyz",
                                                                                   k=noise)))
            if raw_tail:
                raw = body_of(i).encode() + bytes.fromhex(raw_tail)
                dll.SetByteMessageBody(msg._handle, raw, len(raw))
            for key, value in (props or {}).items():
                msg.set_property(key, value.replace("{i}", str(i)))
            if delay:
                msg.set_delay_time_level(delay)
            return msg

        if mode == "async":
            _produce_async(producer, make, first, count)
            count = 0  # all sent
        i = first
        count += first
        while i < count:
            if batch > 1:
                n = min(batch, count - i)
                result = producer.send_batch([make(j) for j in range(i, i + n)])
                emit({"i": i, "n": n, "status": result.status.name, "msg_id": result.msg_id,
                      "offset": result.offset})
                i += n
            elif mode in ("oneway", "oneway-orderly"):
                if mode == "oneway":
                    producer.send_oneway(make(i))
                else:
                    producer.send_oneway_orderly(make(i), i)
                emit({"i": i, "status": "ONEWAY", "t": time.time()})
                i += 1
            else:
                msg = make(i)
                result = producer.send_orderly(msg, i) if mode == "orderly" else producer.send_sync(msg)
                emit({"i": i, "status": result.status.name, "msg_id": result.msg_id, "offset": result.offset,
                      "t": time.time()})
                i += 1
    finally:
        if mode in ("oneway", "oneway-orderly"):
            # librocketmq writes oneway frames from its own threads; a shutdown right after the last call can
            # close the socket before they are written (one lost send in ~60 runs on a loaded machine)
            time.sleep(0.5)
        producer.shutdown()
    emit({"done": True})


def _produce_async(producer, make, first: int, count: int) -> None:  # type: ignore[no-untyped-def]
    """send_async COUNT messages, then wait (up to 60 s) until every one has had its callback."""
    pending = set(range(first, first + count))
    all_done = threading.Condition()
    kept = []  # the messages stay alive until their callbacks have run

    def finished(i: int, line: dict[str, object]) -> None:
        emit({"i": i, **line, "t": time.time()})
        with all_done:
            pending.discard(i)
            all_done.notify_all()

    for i in range(first, first + count):
        msg = make(i)
        kept.append(msg)
        producer.send_async(
            msg,
            lambda result, i=i: finished(i, {"status": result.status.name, "msg_id": result.msg_id,
                                             "offset": result.offset}),
            lambda exc, i=i: finished(i, {"status": "EXCEPTION", "exception": str(exc)}))
    with all_done:
        if not all_done.wait_for(lambda: not pending, 60):
            raise TimeoutError(f"no callback for sends {sorted(pending)}")


def _describe(msg, props: list[str]) -> dict[str, object]:  # type: ignore[no-untyped-def]
    line: dict[str, object] = {
        "topic": _text(msg.topic), "body": _text(msg.body), "tags": _text(msg.tags), "keys": _text(msg.keys),
        "id": _text(msg.id), "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
        "reconsume_times": msg.reconsume_times, "store_size": msg.store_size, "born_timestamp": msg.born_timestamp,
        "store_timestamp": msg.store_timestamp, "commit_log_offset": msg.commit_log_offset,
        "delay_time_level": msg.delay_time_level, "prepared_transaction_offset": msg.prepared_transaction_offset,
        "t": time.time()}
    if props:
        line["props"] = {k: _text(msg.get_property(k)) for k in props}
    return line


def consume(namesrv: str, topic: str, group: str, expression: str, fail_first: bool, orderly: bool,
            fail_always: bool = False, broadcast: bool = False, props: list[str] | None = None) -> None:
    from rocketmq.client import MessageModel, PushConsumer

    failed: set[str] = set()

    def on_message(msg) -> None:  # type: ignore[no-untyped-def]
        line = _describe(msg, props or [])
        body = line["body"]
        fail = fail_always or (fail_first and body not in failed)
        emit({**line, "failed": fail})
        if fail:
            failed.add(str(body))
            raise RuntimeError("consume later, please")

    consumer = PushConsumer(group, orderly=orderly,
                            message_model=MessageModel.BROADCASTING if broadcast else MessageModel.CLUSTERING)
    _name_server(consumer, namesrv)
    _credentials(consumer)
    _settings(consumer, "PushConsumer")
    consumer.subscribe(topic, on_message, expression)
    consumer.start()
    emit({"started": True})
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    consumer.shutdown()
    emit({"shutdown": True})


def pull(namesrv: str, topic: str, group: str, expression: str, max_num: int, props: list[str],
         start: int = 0) -> None:
    from rocketmq.client import PullConsumer

    consumer = PullConsumer(group)
    _name_server(consumer, namesrv)
    _credentials(consumer)
    _settings(consumer, "PullConsumer")
    if start:  # the wheel keeps its pull offsets in a class-level table keyed "%s@%s" % (topic bytes, queueId)
        PullConsumer.offset_table.update({"%s@%s" % (topic.encode(), q): start for q in range(64)})
    consumer.start()
    try:
        # a RecvMessage is valid only until the generator moves on (it then releases the pull result)
        for msg in consumer.pull(topic, expression, max_num):
            emit(_describe(msg, props))
    finally:
        consumer.shutdown()
    emit({"done": True})


def main(argv: list[str]) -> None:
    command = argv[0]
    if command == "produce":
        tags = ["TagA", "TagB"]
        batch = delay = first = pad = 0
        mode = "sync"
        props: dict[str, str] = {}
        raw_tail = ""
        noise = 0
        for flag, value in flag_pairs(argv[5:]):
            if flag == "--tags":
                tags = value.split(",")
            elif flag == "--batch":
                batch = int(value)
            elif flag == "--delay":
                delay = int(value)
            elif flag == "--first":
                first = int(value)
            elif flag == "--pad":
                pad = int(value)
            elif flag == "--mode":
                mode = value
            elif flag == "--prop":
                key, _, props[key] = value.partition("=")
            elif flag == "--raw-tail":
                raw_tail = value
            elif flag == "--noise":
                noise = int(value)
            else:
                raise SystemExit(f"unknown flag {flag!r}")
        produce(argv[1], argv[2], argv[3], int(argv[4]), tags, batch, delay, first, pad, mode, props, raw_tail,
                noise)
    elif command in ("consume", "pull"):
        switches = {"--fail-first", "--fail-always", "--orderly", "--broadcast"}
        valued: dict[str, str] = {}
        positional = []
        rest = argv[1:]
        while rest:
            arg, rest = rest[0], rest[1:]
            if arg in ("--props", "--max", "--from"):
                valued[arg], rest = rest[0], rest[1:]
            elif arg not in switches:
                positional.append(arg)
        names = [k for k in valued.get("--props", "").split(",") if k]
        expression = positional[3] if len(positional) > 3 else "*"
        if command == "pull":
            pull(positional[0], positional[1], positional[2], expression, int(valued.get("--max", "32")), names,
                 int(valued.get("--from", "0")))
        else:
            consume(positional[0], positional[1], positional[2], expression, "--fail-first" in argv,
                    "--orderly" in argv, "--fail-always" in argv, "--broadcast" in argv, names)
    elif command == "probe":
        import rocketmq.client  # noqa: F401

        emit({"ok": True})
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    run_main(main)
