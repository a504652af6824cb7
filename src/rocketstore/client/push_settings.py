"""A push consumer's settings (:class:`PushConsumerSettings`: DefaultMQPushConsumer's fields, Java's defaults
and the ranges its checkConfig allows) and the 4.9.3 constants they are read with.  Pure values, no I/O; the
consumer (:mod:`rocketstore.client.push_consumer`, which re-exports every name) reads them."""

from __future__ import annotations

from dataclasses import dataclass

from rocketstore.client.group_consumer import ConsumerSettingsError, GroupSettings

__all__ = ["CONSUMER_TIMEOUT_WHEN_SUSPEND_S", "DEFAULT_MAX_RECONSUME_TIMES", "PushConsumerSettings"]

#: the limit of a concurrent consumer left at max_reconsume_times -1, and an orderly one's (no limit)
DEFAULT_MAX_RECONSUME_TIMES = 16
#: the bound of a long-polling pull: 4.9.3's push consumer's CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND
CONSUMER_TIMEOUT_WHEN_SUSPEND_S = 30.0
_JAVA_INT_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PushConsumerSettings(GroupSettings):
    """Everything but the name servers, group, subscriptions and handler; Java's defaults unless noted
    (the group, pull and offset settings are :class:`GroupSettings`')."""

    orderly: bool = False
    #: messages per handler call (consumeMessageBatchMaxSize)
    consume_batch_size: int = 1
    #: messages per pull (pullBatchSize)
    pull_batch_size: int = 32
    #: concurrently: send-backs before the DLQ; orderly: local retries before the DLQ.  -1 (Java's
    #: default): 16 concurrently, no limit orderly (an orderly queue retries its message until it succeeds)
    max_reconsume_times: int = -1
    #: handler calls at once (consumeThreadMax; sync handlers run on a pool of this many threads)
    consume_concurrency: int = 20
    lock_renew_interval_s: float = 20.0
    #: a lock not renewed for this long is not trusted any more (the broker keeps it 60 s)
    lock_max_live_s: float = 30.0
    #: orderly RECONSUME_LATER: pause before the same messages are handled again
    suspend_current_queue_s: float = 1.0
    #: concurrently: a message that cannot be sent back is handled again here after this pause
    local_retry_delay_s: float = 5.0
    #: concurrently: a message whose handler has run longer than this is sent back (delay level 3) and no
    #: longer holds its queue's offset back; checked this often too (consumeTimeout, 15 minutes)
    consume_timeout_s: float = 900.0
    #: how long the broker may hold a pull with no message (brokerSuspendMaxTimeMillis)
    long_poll_ms: int = 15_000
    #: pause after a pull that found messages before the queue's next pull (pullInterval)
    pull_interval_s: float = 0.0
    #: -1 (off), or the messages / bytes all held queues may hold together: each queue's threshold becomes
    #: this divided by the number of queues held, at least 1 message / 1 MiB (pullThresholdForTopic,
    #: pullThresholdSizeForTopic; they replace pull_threshold_for_queue / pull_threshold_bytes_for_queue)
    pull_threshold_for_topic: int = -1
    pull_threshold_bytes_for_topic: int = -1
    #: a queue whose pull loop has not come round for this long (or has died) is dropped and taken again by
    #: the next rebalance (Java's ProcessQueue.isPullExpired, rocketmq.client.pull.pullMaxIdleTime)
    pull_max_idle_s: float = 120.0
    #: record SubBefore / SubAfter for every message handled (:mod:`rocketstore.client.trace_consumer`), sent
    #: in the background to ``trace_topic`` (None: RMQ_SYS_TRACE_TOPIC), as DefaultMQPushConsumer's
    #: enableMsgTrace and customizedTraceTopic
    enable_trace: bool = False
    trace_topic: str | None = None
    #: how long shutdown waits for the handlers in progress (DefaultMQPushConsumer's
    #: awaitTerminationMillisWhenShutdown); None: as long as they take.  Past it the handlers still running
    #: are abandoned: an async one is cancelled, a sync one's thread runs on but its result is ignored, and
    #: their messages stay uncommitted (handled again by the group after the restart, none lost)
    await_termination_when_shutdown_s: float | None = None

    def check(self) -> None:
        """DefaultMQPushConsumerImpl.checkConfig's ranges (ConsumerSettingsError), and ours for the rest."""
        self.check_range("consume_concurrency", 1, 1000, "consumeThreadMin/consumeThreadMax")
        self.check_range("consume_max_span", 1, 65535, "consumeConcurrentlyMaxSpan")
        self.check_range("pull_threshold_for_queue", 1, 65535, "pullThresholdForQueue")
        self.check_range("pull_threshold_for_topic", 1, 6553500, "pullThresholdForTopic", off=-1)
        # Java counts these two in MiB
        self.check_range("pull_threshold_bytes_for_queue", 1, 1024, "pullThresholdSizeForQueue", unit=1 << 20)
        self.check_range("pull_threshold_bytes_for_topic", 1, 102400, "pullThresholdSizeForTopic", off=-1,
                         unit=1 << 20)
        self.check_range("pull_interval_s", 0, 65535, "pullInterval", unit=0.001)  # Java: ms
        self.check_range("consume_batch_size", 1, 1024, "consumeMessageBatchMaxSize")
        self.check_range("pull_batch_size", 1, 1024, "pullBatchSize")
        if not self.consume_timeout_s > 0:
            raise ConsumerSettingsError("consume_timeout_s must be positive")
        if self.max_reconsume_times < -1:
            raise ConsumerSettingsError("max_reconsume_times must be -1 (the default) or at least 0")
        wait_s = self.await_termination_when_shutdown_s
        if wait_s is not None and not wait_s >= 0:
            raise ConsumerSettingsError("await_termination_when_shutdown_s must be None or at least 0")

    @property
    def consumer_timeout_when_suspend_s(self) -> float:
        """The bound of each pull: 30 s as 4.9.3's push consumer, more when ``long_poll_ms`` (a constant
        15 s in 4.9.3) lets the broker hold a pull that long."""
        return max(CONSUMER_TIMEOUT_WHEN_SUSPEND_S, self.long_poll_ms / 1000 + self.timeout_s)

    def reconsume_limit(self) -> int:
        """The effective max_reconsume_times (Java's getMaxReconsumeTimes of each consume service): -1 is 16
        concurrently and Integer.MAX_VALUE (no limit) orderly."""
        if self.max_reconsume_times != -1:
            return self.max_reconsume_times
        return _JAVA_INT_MAX if self.orderly else DEFAULT_MAX_RECONSUME_TIMES
