"""What a push consumer tells about itself when a broker or an admin asks (GET_CONSUMER_RUNNING_INFO, 4.9.3's
ConsumerRunningInfo): its settings under Java's property names, the queues it holds with their figures, the
per-topic consume status and, with ``jstack``, every thread's stack.  Read-only: nothing here is on the
pull or consume path."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo, ProcessQueueInfo, QueueKey

if TYPE_CHECKING:
    from rocketstore.client.push_consumer import PushConsumer

__all__ = ["push_running_info", "thread_stacks"]


def push_running_info(consumer: PushConsumer, *, jstack: bool = False) -> ConsumerRunningInfo:
    """What GET_CONSUMER_RUNNING_INFO answers: settings (under Java's property names), subscriptions,
    the queues held, per-topic figures and, if asked, the stacks of this process's threads."""
    s = consumer.settings
    props = {
        **consumer._common_properties(),
        "pullThresholdForQueue": str(consumer._flow_settings.pull_threshold_for_queue),
        "pullThresholdSizeForQueue": str(consumer._flow_settings.pull_threshold_bytes_for_queue >> 20),
        "pullThresholdForTopic": str(s.pull_threshold_for_topic),
        "pullThresholdSizeForTopic": str(s.pull_threshold_bytes_for_topic >> 20),  # -1 stays -1
        "pullInterval": str(int(s.pull_interval_s * 1000)),
        "consumeThreadMin": str(s.consume_concurrency), "consumeThreadMax": str(s.consume_concurrency),
        "consumeConcurrentlyMaxSpan": str(s.consume_max_span),
        "consumeTimeout": str(int(s.consume_timeout_s // 60)),
        "pullBatchSize": str(s.pull_batch_size), "consumeMessageBatchMaxSize": str(s.consume_batch_size),
        "maxReconsumeTimes": str(s.max_reconsume_times),
        "suspendCurrentQueueTimeMillis": str(int(s.suspend_current_queue_s * 1000)),
        "heartbeatBrokerInterval": str(int(s.heartbeat_interval_s * 1000)),
        "persistConsumerOffsetInterval": str(int(s.persist_interval_s * 1000)),
        "pollNameServerInterval": str(int(s.route_refresh_interval_s * 1000)),
        ConsumerRunningInfo.PROP_THREADPOOL_CORE_SIZE: str(s.consume_concurrency),
        ConsumerRunningInfo.PROP_CONSUME_ORDERLY: "true" if consumer.orderly else "false",
    }
    wall_ms, mono = time.time() * 1000, time.monotonic()

    def wall(monotonic_s: float) -> int:
        return int(wall_ms - (mono - monotonic_s) * 1000) if monotonic_s > 0 else 0

    table: dict[QueueKey, ProcessQueueInfo] = {}
    for mq, pq in consumer.process_queues.items():
        held = list(pq.messages)
        consuming = list(pq.consuming)
        table[(mq.topic, mq.broker_name, mq.queue_id)] = ProcessQueueInfo(
            commit_offset=consumer.offsets.read_memory(mq),
            cached_msg_min_offset=held[0] if held else 0, cached_msg_max_offset=held[-1] if held else 0,
            cached_msg_count=len(held), cached_msg_size_mib=pq.body_bytes >> 20,
            transaction_msg_min_offset=min(consuming) if consuming else 0,
            transaction_msg_max_offset=max(consuming) if consuming else 0,
            transaction_msg_count=len(consuming), locked=pq.locked, try_unlock_times=pq.try_unlock_times,
            last_lock_timestamp=wall(pq.last_lock_s), dropped=pq.dropped,
            last_pull_timestamp=wall(pq.last_pull_s), last_consume_timestamp=wall(pq.last_consume_s))
    status = {topic: consumer.stats.status(topic) for topic in consumer.subscriptions}
    return ConsumerRunningInfo(props, tuple(consumer.subscriptions.values()), table, status,
                               thread_stacks() if jstack else None)


def thread_stacks() -> str:
    """Every thread's stack in this process, most recent call last (the ``jstack`` of a running info)."""
    frames = sys._current_frames()
    out = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        out.append(f'"{thread.name}" daemon={thread.daemon} ident={thread.ident}\n')
        if frame is not None:
            out.extend(traceback.format_stack(frame))
        out.append("\n")
    return "".join(out)
