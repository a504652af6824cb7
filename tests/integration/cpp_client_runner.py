"""Drive the official RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4, librocketmq 1.x) in its own process.

The C++ client spawns threads and does not always shut down cleanly, so tests run it here, in a
subprocess they can kill, and talk to it in JSON lines on stdout:

    python cpp_client_runner.py produce NAMESRV TOPIC GROUP COUNT [--batch N] [--tags A,B] [--delay LEVEL] [--first I]
                                                        [--pad N] [--mode sync|oneway|orderly]
        one {"i", "status", "msg_id", "offset", "t"} line per send, then {"done": true}; --mode oneway sends with
        send_oneway (status "ONEWAY", no id), --mode orderly with send_orderly(msg, i) (the wheel's hashing
        selector: queue i % queue count)
    python cpp_client_runner.py consume NAMESRV TOPIC GROUP [EXPRESSION] [--fail-first | --fail-always] [--orderly]
        {"started": true}, then one {"body", "tags", "keys", "id", "queue_id", "queue_offset", "topic",
        "reconsume_times", "t", "failed"} line per delivery; with --fail-first the first delivery of each body
        raises (RECONSUME_LATER), with --fail-always every delivery does; a "stop" line (or EOF) on stdin shuts
        the consumer down, then {"shutdown": true}

With RMQ_ACCESS_KEY / RMQ_SECRET_KEY (and RMQ_CHANNEL) in the environment, producer and consumer sign their
requests (set_session_credentials), as against a broker with aclEnable.

Message i has body ``body-i ünï`` (plus a space and N "x" with --pad N), key ``key-i`` and tag TAGS[i % len(TAGS)].  Exits with os._exit so a
hanging C++ destructor cannot keep the process alive.  The C++ client logs to $HOME/logs/rocketmq-cpp:
tests point HOME at a temporary directory.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

_print_lock = threading.Lock()


def emit(obj: object) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def body_of(i: int) -> str:
    return f"body-{i} ünï"


def _text(value: object) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _credentials(client) -> None:  # type: ignore[no-untyped-def]
    access_key = os.environ.get("RMQ_ACCESS_KEY")
    if access_key is not None:
        client.set_session_credentials(access_key, os.environ.get("RMQ_SECRET_KEY", ""),
                                       os.environ.get("RMQ_CHANNEL", ""))


def produce(namesrv: str, topic: str, group: str, count: int, tags: list[str], batch: int, delay: int,
            first: int, pad: int, mode: str = "sync") -> None:
    from rocketmq.client import Message, Producer

    producer = Producer(group)
    producer.set_namesrv_addr(namesrv)
    _credentials(producer)
    producer.start()
    try:
        def make(i: int) -> Message:
            msg = Message(topic)
            msg.set_keys(f"key-{i}")
            msg.set_tags(tags[i % len(tags)])
            msg.set_body(body_of(i) + " " + "x" * pad if pad else body_of(i))
            if delay:
                msg.set_delay_time_level(delay)
            return msg

        i = first
        count += first
        while i < count:
            if batch > 1:
                n = min(batch, count - i)
                result = producer.send_batch([make(j) for j in range(i, i + n)])
                emit({"i": i, "n": n, "status": result.status.name, "msg_id": result.msg_id,
                      "offset": result.offset})
                i += n
            elif mode == "oneway":
                producer.send_oneway(make(i))
                emit({"i": i, "status": "ONEWAY", "t": time.time()})
                i += 1
            else:
                msg = make(i)
                result = producer.send_orderly(msg, i) if mode == "orderly" else producer.send_sync(msg)
                emit({"i": i, "status": result.status.name, "msg_id": result.msg_id, "offset": result.offset,
                      "t": time.time()})
                i += 1
    finally:
        producer.shutdown()
    emit({"done": True})


def consume(namesrv: str, topic: str, group: str, expression: str, fail_first: bool, orderly: bool,
            fail_always: bool = False) -> None:
    from rocketmq.client import PushConsumer

    failed: set[str] = set()

    def on_message(msg) -> None:  # type: ignore[no-untyped-def]
        body = _text(msg.body)
        fail = fail_always or (fail_first and body not in failed)
        emit({"topic": _text(msg.topic), "body": body, "tags": _text(msg.tags), "keys": _text(msg.keys),
              "id": _text(msg.id), "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
              "reconsume_times": msg.reconsume_times, "t": time.time(), "failed": fail})
        if fail:
            failed.add(body)
            raise RuntimeError("consume later, please")

    consumer = PushConsumer(group, orderly=orderly)
    consumer.set_namesrv_addr(namesrv)
    _credentials(consumer)
    consumer.subscribe(topic, on_message, expression)
    consumer.start()
    emit({"started": True})
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    consumer.shutdown()
    emit({"shutdown": True})


def main(argv: list[str]) -> None:
    command = argv[0]
    if command == "produce":
        tags = ["TagA", "TagB"]
        batch = delay = first = pad = 0
        mode = "sync"
        rest = argv[5:]
        while rest:
            flag, value, rest = rest[0], rest[1], rest[2:]
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
        produce(argv[1], argv[2], argv[3], int(argv[4]), tags, batch, delay, first, pad, mode)
    elif command == "consume":
        flags = {"--fail-first", "--fail-always", "--orderly"}
        positional = [a for a in argv[1:] if a not in flags]
        consume(positional[0], positional[1], positional[2], positional[3] if len(positional) > 3 else "*",
                "--fail-first" in argv, "--orderly" in argv, "--fail-always" in argv)
    elif command == "probe":
        import rocketmq.client  # noqa: F401

        emit({"ok": True})
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    code = 0
    try:
        main(sys.argv[1:])
    except BaseException as exc:  # noqa: BLE001 - report anything, then leave without running C++ destructors
        emit({"error": f"{type(exc).__name__}: {exc}"})
        code = 1
    sys.stdout.flush()
    os._exit(code)
