"""A push consumer in a process of its own, for the at-least-once test that SIGKILLs it.

    python push_consumer_child.py NAMESRV TOPIC GROUP OUT_FILE

Consumes TOPIC as GROUP (CLUSTERING, offsets committed every 0.2 s) and appends one line
``queue_id queue_offset msg_id`` per handled message to OUT_FILE, flushed before the handler returns, so
what the file holds was handled before the offset could move past it.  Prints ``started`` once the
first rebalance is done, then runs until it is killed.
"""

from __future__ import annotations

import sys
import threading
import time

from rocketstore.client import BlockingPushConsumer, ConsumedMessage, ConsumeStatus


def main() -> None:
    namesrv, topic, group, out_path = sys.argv[1:5]
    out = open(out_path, "a", encoding="utf-8")  # noqa: SIM115 - open until the process dies
    lock = threading.Lock()

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        time.sleep(0.005)  # at most ~800 messages/s over 4 threads: a kill lands mid-stream
        with lock:
            for m in messages:
                out.write(f"{m.queue_id} {m.queue_offset} {m.msg_id}\n")
                out.flush()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = BlockingPushConsumer(namesrv, group, {topic: "*"}, handle, persist_interval_s=0.2,
                                    heartbeat_interval_s=0.5, rebalance_interval_s=0.5,
                                    route_refresh_interval_s=0.5, consume_concurrency=4, long_poll_ms=2000)
    consumer.start()
    print("started", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
