"""An asyncio lite pull consumer (RocketMQ 4.9's DefaultLitePullConsumer): the caller drives a ``poll()`` loop,
Kafka style, while background tasks keep a buffer of pulled messages per queue.

    async with LitePullConsumer("127.0.0.1:9876", "my-group") as consumer:
        consumer.subscribe("TopicA", "TagA || TagB")      # or consumer.assign([...]) before or after start
        while True:
            for m in await consumer.poll(timeout_s=5.0):
                ...                                       # auto-committed by a later poll()

Two modes, exclusive as in 4.9.3 (mixing them raises :class:`SubscriptionConflictError`):

* subscribe: the group shares each topic's queues with rebalance, heartbeats carry the subscriptions
  (CONSUME_ACTIVELY; no ``%RETRY%<group>`` subscription: a lite consumer sends nothing back) and
  NOTIFY_CONSUMER_IDS_CHANGED rebalances at once (:class:`GroupConsumer`, shared with the push consumer).
  A queue given up by a rebalance is dropped with its buffered messages; what the offset store holds for
  it (the last auto commit or ``commit_sync``, not the batch in hand) is written out, as 4.9.3's
  removeUnnecessaryMessageQueue does, so the next owner may see that batch again but never skips it.
* assign: exactly the queues given, no rebalance.  The group still heartbeats (no subscriptions) the
  brokers of the assigned topics' routes and unregisters at close, as 4.9.3's client instance does for
  every consumer it holds: the brokers (and ``consumerConnection``) see the consumer online.

Each held queue has a pull task (:func:`pull_loop`, shared with the push consumer: long polling, and
pulling pauses while the queue holds ``pull_threshold_for_queue`` messages or
``pull_threshold_bytes_for_queue`` bytes, while the batches waiting for ``poll()`` hold more than
``pull_threshold_for_all`` messages, or while the queue is paused).  Each pull result is one batch of at
most ``pull_batch_size`` messages; ``poll()`` hands out one batch.

Offsets, as 4.9.3: a queue's consumed offset is the one after the last message ``poll()`` returned;
with ``auto_commit`` a ``poll()`` copies the consumed offsets into the offset store once every
``auto_commit_interval_s``, and the store is written out (to the broker for CLUSTERING, to the local
offset file for BROADCASTING) every ``persist_interval_s`` and at ``close()``.  ``commit_sync()`` does both
at once.  ``close()`` commits nothing itself, as 4.9.3's shutdown: what was polled since the last commit
is polled again after a restart (call ``commit_sync()`` first to keep it), never lost with a batch the
caller was still handling when it closed (``async with`` left by an exception).  Pulls carry no commit
offset (as 4.9.3's lite pulls): the offset store alone writes offsets out.  A queue without a committed
offset starts where ``consume_from_where`` says (the push consumer's rules).  ``seek*`` drops the queue's
buffered messages and restarts its pull at the offset.

``poll()`` returns :class:`ConsumedMessage`, what the push consumer's handler gets (the pull loop makes
them anyway): it carries ``broker_name``, so ``MessageQueue(m.topic, m.broker_name, m.queue_id)`` names a
message's queue for ``seek`` / ``committed``, and ``msg_id`` is the client's UNIQ_KEY as Java's
MessageClientExt answers it.  As in 4.9.3, its properties hold MIN_OFFSET / MAX_OFFSET, the queue's bounds
as the pull that found it answered them (``int(m.properties["MAX_OFFSET"]) - m.queue_offset``: the messages
from it to the queue's end then, it included), and ``born_host`` / ``store_host`` / ``sys_flag`` are the
stored record's.

Loop-bound: create, use and close it on one event loop.  :class:`BlockingLitePullConsumer`
(:mod:`rocketstore.client.blocking_push`) runs one in a thread for code without a loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from rocketstore.client.consumer import MessageSelector, subscribed
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError, NoRouteError
from rocketstore.client.group_consumer import (
    ConsumerSettingsError,
    GroupConsumer,
    GroupSettings,
    LookupRound,
    resolve_settings,
)
from rocketstore.client.namespace import (
    queue_with_namespace,
    queues_with_namespace,
    queues_without_namespace,
    with_namespace,
    without_namespace,
)
from rocketstore.client.outgoing_message import new_uniq_key
from rocketstore.client.process_queue import ProcessQueue, wait_event
from rocketstore.client.pull_loop import flow_controlled, pull_loop
from rocketstore.client.push_types import ConsumedMessage, ConsumeFromWhere
from rocketstore.client.route import MessageQueue
from rocketstore.client.trace_consumer import sub_after_context, sub_before_context
from rocketstore.client.trace_dispatch import TraceDispatcher
from rocketstore.errors import LoopBoundError, RocketStoreError
from rocketstore.remoting.bodies import ConsumeType
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo
from rocketstore.remoting.tls import ClientTls
from rocketstore.repeats import FailureRun

__all__ = ["ConsumerNotRunningError", "LitePullConsumer", "LitePullConsumerSettings", "SubscriptionConflictError",
           "TopicQueuesListener"]

log = logging.getLogger(__name__)

#: what register_topic_message_queue_change_listener calls: (topic, its queues now); may be a coroutine function
TopicQueuesListener = Callable[[str, frozenset[MessageQueue]], "Awaitable[None] | None"]


class ConsumerNotRunningError(ClientError):
    """poll / seek / commit on a consumer not started yet or closed (4.9.3's IllegalStateException)."""


#: DefaultLitePullConsumerImpl's NOT_RUNNING_EXCEPTION_MESSAGE
NOT_RUNNING_MESSAGE = "The consumer not running, please start it first."


class SubscriptionConflictError(ClientError):
    """subscribe after assign, or assign after subscribe: the two are exclusive."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LitePullConsumerSettings(GroupSettings):
    """Everything but the name servers and group; 4.9.3's DefaultLitePullConsumer defaults."""

    #: messages per pull, so the most one poll() returns (pullBatchSize)
    pull_batch_size: int = 10
    #: pulling waits while the batches not yet polled hold more than this many messages (pullThresholdForAll)
    pull_threshold_for_all: int = 10_000
    #: how long the broker may hold a pull with no message (brokerSuspendMaxTimeMillis)
    long_poll_ms: int = 20_000
    #: the bound of each pull, which the broker may hold ``long_poll_ms`` (consumerTimeoutMillisWhenSuspend)
    consumer_timeout_when_suspend_s: float = 30.0
    auto_commit: bool = True
    #: poll() commits the consumed offsets when this long has passed since it last did
    #: (autoCommitIntervalMillis; Java ignores a value under 1 s, this raises)
    auto_commit_interval_s: float = 5.0
    #: how often the queues of topics with a change listener are fetched again (topicMetadataCheckIntervalMillis)
    topic_metadata_check_interval_s: float = 30.0
    #: how long poll() called without a timeout waits for a batch (pollTimeoutMillis)
    poll_timeout_s: float = 5.0
    #: trace every pulled batch (a SubBefore and a SubAfter record per message, as 4.9.3's pull hook writes
    #: them: when the pull returns, success, costTime 0) to ``trace_topic`` (None: RMQ_SYS_TRACE_TOPIC), as
    #: DefaultLitePullConsumer's enableMsgTrace and customizedTraceTopic
    enable_trace: bool = False
    trace_topic: str | None = None

    def check(self) -> None:
        for name in ("pull_batch_size", "pull_threshold_for_queue", "pull_threshold_for_all"):
            if getattr(self, name) < 1:
                raise ConsumerSettingsError(f"{name} must be at least 1")
        if self.auto_commit_interval_s < 1.0:
            raise ConsumerSettingsError(
                "auto_commit_interval_s must be at least 1 s (autoCommitIntervalMillis' minimum)")
        if self.topic_metadata_check_interval_s <= 0:
            raise ConsumerSettingsError("topic_metadata_check_interval_s must be positive")
        if not self.poll_timeout_s >= 0:
            raise ConsumerSettingsError("poll_timeout_s must not be negative")
        if self.consumer_timeout_when_suspend_s * 1000 < self.long_poll_ms:  # as 4.9.3's checkConfig
            raise ConsumerSettingsError(
                f"consumer_timeout_when_suspend_s ({self.consumer_timeout_when_suspend_s!r}) must be at "
                f"least long_poll_ms / 1000 ({self.long_poll_ms / 1000:g}) (4.9.3: Long polling mode, the consumer "
                "consumerTimeoutMillisWhenSuspend must greater than brokerSuspendMaxTimeMillis)")


class _Mode(Enum):
    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"


class _Batches:
    """The pulled batches waiting for poll(), oldest first (4.9.3's consumeRequestCache); the pull loop's
    ``consumption``.  A batch of a dropped process queue (rebalanced away, seeked) is never handed out."""

    def __init__(self) -> None:
        self.batches: deque[tuple[ProcessQueue, list[ConsumedMessage]]] = deque()
        self.closed = False
        self._arrived = asyncio.Event()

    def dispatch(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        self.batches.append((pq, messages))
        self._arrived.set()

    def discard(self, pq: ProcessQueue) -> None:
        self.batches = deque(b for b in self.batches if b[0] is not pq)

    def close(self) -> None:
        self.closed = True
        self._arrived.set()

    async def take(self, timeout_s: float) -> tuple[ProcessQueue, list[ConsumedMessage]] | None:
        """The oldest live batch, waiting up to *timeout_s* for one; None if none came (or on close)."""
        deadline = time.monotonic() + timeout_s
        while True:
            while self.batches:
                pq, messages = self.batches.popleft()
                if not pq.dropped:
                    return pq, messages
            remaining = deadline - time.monotonic()
            if self.closed or remaining <= 0:
                return None
            self._arrived.clear()
            await wait_event(self._arrived, remaining)


class _TracedBatches(_Batches):
    """_Batches whose every pulled batch is traced as 4.9.3's lite pull consumer traces it: its consume hook
    runs right after the pull (not at poll()), so a SubBefore and at once a SubAfter (success, costTime
    the time between the two divided by the messages, contextCode 0) with the same requestId; the group
    and the topics without the namespace (the batch itself keeps it until poll() hands it out).  A consumer
    without trace uses the plain _Batches."""

    def __init__(self, dispatcher: TraceDispatcher, group: str, namespace: str | None) -> None:
        super().__init__()
        self.dispatcher = dispatcher
        self.group = group
        self.namespace = namespace

    def dispatch(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        began_ms = int(time.time() * 1000)
        before = sub_before_context(self.group, messages, new_uniq_key(), began_ms, self.namespace)
        if before is not None:
            self.dispatcher.append(before)
            self.dispatcher.append(sub_after_context(before, began_ms, len(messages), True, 0))
        super().dispatch(pq, messages)


@dataclass(slots=True)
class _QueueState:
    """One held queue (4.9.3's MessageQueueState): its process queue, pull task and consumed offset."""

    pq: ProcessQueue
    task: asyncio.Task[None] | None = None
    #: the offset after the last message poll() returned; -1 before the first
    consumed_offset: int = -1
    paused: bool = False


class LitePullConsumer(GroupConsumer):
    settings: LitePullConsumerSettings
    consume_type = ConsumeType.ACTIVELY
    what = "lite pull consumer"
    kind = "PullConsumer"
    orderly = False
    #: pulls carry no commit offset (4.9.3's lite pulls neither): a broker offset written behind the offset
    #: store's back made it skip a later commit of the value it sent last (a seek back, then commit_sync)
    commit_offset_with_pull = False
    #: a pull that times out closes its connection (4.9.3's lite pulls are sync calls)
    close_on_pull_timeout = True

    def __init__(self, namesrv_addr: str | None, group: str, settings: LitePullConsumerSettings | None = None, *,
                 credentials: SessionCredentials | None = None, tls: ClientTls = None,
                 **settings_kw: object) -> None:
        """*settings* or keyword arguments naming :class:`LitePullConsumerSettings` fields; *credentials*:
        ACL access key and secret every request (name servers' too) is signed with; *tls*: this consumer's
        own TLS switch (4.9.3's setUseTLS; None follows the process, see
        :data:`rocketstore.remoting.tls.ClientTls`)."""
        if not group:
            raise ValueError("a lite pull consumer needs a consumer group")
        super().__init__(namesrv_addr, group, resolve_settings(LitePullConsumerSettings, settings, settings_kw),
                         credentials, tls)
        #: the message trace's dispatcher (None: off, and the plain _Batches is used)
        self.trace: TraceDispatcher | None = None
        if self.settings.enable_trace:  # (its producer's group is made of the group as given, as 4.9.3's)
            self.trace = TraceDispatcher(self.namesrv_addr, group, "CONSUME",
                                         trace_topic=self.settings.trace_topic, credentials=credentials,
                                         tls=self.consumer.pool.tls, namesrv_domain=self.settings.namesrv_domain,
                                         namesrv_domain_subgroup=self.settings.namesrv_domain_subgroup)
            traced_group = without_namespace(self.namespace, self.group)
            self.consumption: _Batches = _TracedBatches(self.trace, traced_group, self.namespace)
        else:
            self.consumption = _Batches()
        self._mode = _Mode.NONE
        self._assigned: set[MessageQueue] = set()
        #: assigned queues paused before start: their pull starts paused (4.9.3 keeps a queue's paused flag
        #: from assign on, so pause() between assign() and start() holds)
        self._paused_before_start: set[MessageQueue] = set()
        self._states: dict[MessageQueue, _QueueState] = {}
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._next_auto_commit_s = -1.0
        #: topic -> its change listener, and the queues it was last told of (None: not fetched yet)
        self._queue_listeners: dict[str, TopicQueuesListener] = {}
        self._known_queues: dict[str, frozenset[MessageQueue] | None] = {}

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """As :meth:`GroupConsumer.update_namesrv_addr`; the trace producer follows."""
        super().update_namesrv_addr(namesrv_addr)
        if self.trace is not None:
            self.trace.producer.update_namesrv_addr(namesrv_addr)

    # --- life cycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        self._mark_started()
        try:
            await self.offsets.load()
            if self._mode is _Mode.SUBSCRIBE:
                await self._join_group()
            for mq in sorted(self._assigned):
                self._add_queue(mq, paused=mq in self._paused_before_start)
            self._paused_before_start.clear()
            if self._mode is _Mode.ASSIGN:  # not fatal: the periodic heartbeat tries again
                await self.quietly("heartbeat", self._heartbeat_all())
            for topic in self._queue_listeners:
                self._known_queues[topic] = await self._fetch_queue_set(topic)
        except BaseException:  # nothing may stay open behind a failed start
            self.start_failed = True  # START_FAILED for good, as 4.9.3's start leaves it
            self.stopping = True
            await self._stop_pulls()
            if self.trace is not None:  # a failure here must not hide why the start failed
                await self.quietly("close the trace", self.trace.close())
            await self.consumer.close()
            raise
        loop = asyncio.get_running_loop()
        self._background = [*self._group_tasks(),
                            loop.create_task(self._every(self.settings.persist_interval_s, self.persist_offsets)),
                            loop.create_task(self._every(self.settings.topic_metadata_check_interval_s,
                                                         self.check_topic_queues))]

    async def close(self) -> None:
        """Stop pulling, write the offset store out (what the last auto commit or ``commit_sync`` put
        there: as 4.9.3's shutdown, not what was polled since), unregister from the brokers, close the
        connections.  A second call does nothing."""
        if not self.started or self.stopping:
            return
        self.stopping = True
        self._wake.set()
        self._rebalance_wanted.set()
        self.consumption.close()
        await asyncio.gather(*self._background, *self._side_tasks, return_exceptions=True)
        async with self._rebalance_lock:
            await self._stop_pulls()
            await self.quietly("persist offsets", self.persist_offsets())
            for state in self._states.values():
                state.pq.dropped = True
            await self._unregister_all()
        if self.trace is not None:  # what was traced is sent before the connections close
            await self.quietly("send the trace", self.trace.close())
        await self.consumer.close()

    async def shutdown(self) -> None:
        """:meth:`close` under 4.9.3's name (``async with`` calls it)."""
        await self.close()

    async def _stop_pulls(self) -> None:
        tasks = [state.task for state in self._states.values() if state.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _check_running(self) -> None:
        """ConsumerNotRunningError in 4.9.3's words (DefaultLitePullConsumerImpl.checkServiceState), with
        ours after "Cause: " for a closed one."""
        if not self.started:
            raise ConsumerNotRunningError(NOT_RUNNING_MESSAGE)
        if self.stopping:
            raise ConsumerNotRunningError(f"{NOT_RUNNING_MESSAGE} Cause: the lite pull consumer is closed")

    # --- subscribe / assign ------------------------------------------------------------------------------

    def _set_mode(self, mode: _Mode) -> None:
        if self._mode is not _Mode.NONE and self._mode is not mode:
            raise SubscriptionConflictError(
                f"subscribe and assign are mutually exclusive: this consumer already uses {self._mode.value.lower()}")
        self._mode = mode

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Consume *topic*'s queues shared with the group: a tag expression (``"*"``, ``"TagA || TagB"``) or
        a :class:`MessageSelector` (SQL92 needs ``enablePropertyFilter=true`` on the broker; checked at
        start, after start by the broker's pulls).  Subscribing again replaces the expression."""
        if not topic:
            raise ValueError("topic must not be empty")
        topic = with_namespace(self.namespace, topic)
        self._set_mode(_Mode.SUBSCRIBE)
        self.subscriptions[topic] = subscribed(topic, expression, int(time.time() * 1000))
        self._resubscribed()  # heartbeat the new subscriptions and rebalance now

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming *topic*: its queues are dropped with their buffered messages."""
        topic = with_namespace(self.namespace, topic)
        if self.subscriptions.pop(topic, None) is None:
            return
        self._leave([mq for mq in self._states if mq.topic == topic])
        self._resubscribed()

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly *queues* (no rebalance); queues assigned before and not now are dropped."""
        wanted = set(self._in_namespace(queues))
        if not wanted:
            raise ValueError("message queues must not be empty")
        self._set_mode(_Mode.ASSIGN)
        self._assigned = wanted
        self._paused_before_start &= wanted
        if self.started and not self.stopping:
            self._leave([mq for mq in self._states if mq not in wanted])
            for mq in sorted(wanted - set(self._states)):
                self._add_queue(mq)
            # the brokers of the assigned topics learn of the group now, not at the next periodic heartbeat
            # (4.9.3's first heartbeat comes a second after start, where an assign usually follows)
            self._resubscribed()

    def assignment(self, topic: str | None = None) -> set[MessageQueue]:
        """The queues held now (of *topic*, or all), named without the namespace."""
        topic = None if topic is None else with_namespace(self.namespace, topic)
        held = [mq for mq in self._states if topic is None or mq.topic == topic]
        return set(held if self.namespace is None else queues_without_namespace(self.namespace, held))

    def _in_namespace(self, queues: Iterable[MessageQueue]) -> Iterable[MessageQueue]:
        """*queues* in the namespace (ClientConfig.queuesWithNamespace)."""
        return queues if self.namespace is None else queues_with_namespace(self.namespace, queues)

    # --- queues ------------------------------------------------------------------------------------------

    def _add_queue(self, mq: MessageQueue, *, paused: bool = False) -> None:
        state = _QueueState(ProcessQueue(mq), paused=paused)
        self._states[mq] = state
        state.task = asyncio.get_running_loop().create_task(self._pull_from_start(state.pq))

    async def _pull_from_start(self, pq: ProcessQueue) -> None:
        """Where the queue starts (the committed offset, else ``consume_from_where``), then its pull loop;
        a failed look-up is tried again after ``pull_delay_on_error_s``, as 4.9.3's pull task does (of a run
        of failures, the first and every 1000th are warnings, the others debug lines)."""
        failures = FailureRun()
        while not pq.dropped and not self.stopping:
            try:
                offset = await self.compute_pull_from_where(pq.mq)
            except LoopBoundError as exc:  # another loop's connections (assign from another loop): no retry
                log.error("pulling %s stops: %s", pq.mq, exc)
                return
            except (RocketStoreError, OSError) as exc:
                log.log(failures.failed(),
                        "cannot compute where to pull %s from: %s (%d in a row; trying again every %s s)",
                        pq.mq, exc, failures.count, self.settings.pull_delay_on_error_s)
                await asyncio.sleep(self.settings.pull_delay_on_error_s)
                continue
            log.info("%s now pulls %s from offset %d", self.client_id, pq.mq, offset)
            await pull_loop(self, pq, offset)
            return

    def _drop(self, mq: MessageQueue) -> _QueueState:
        """Stop pulling *mq* and forget its buffered messages.  Its consumed offset is not committed: the
        caller writes out what the offset store already holds (4.9.3 persists, it does not commitAll)."""
        state = self._states.pop(mq)
        state.pq.dropped = True
        state.pq.wake()
        self.consumption.discard(state.pq)
        if state.task is not None:
            state.task.cancel()
        return state

    def _leave(self, mqs: list[MessageQueue]) -> None:
        """Drop *mqs* now (sync callers) and write their offsets out in the background."""
        if not mqs:
            return
        tasks = [task for task in (self._drop(mq).task for mq in mqs) if task is not None]
        if self.started and not self.stopping:
            side = asyncio.get_running_loop().create_task(self._write_left(mqs, tasks))
            self._side_tasks.add(side)
            side.add_done_callback(self._side_tasks.discard)

    async def _write_left(self, mqs: list[MessageQueue], tasks: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.quietly("commit offsets of dropped queues", self.offsets.persist(mqs))
        for mq in mqs:
            if mq not in self._states:
                self.offsets.remove(mq)

    async def _update_assignment(self, topic: str, mine: set[MessageQueue]) -> None:
        """4.9.3's updateProcessQueueTableInRebalance + removeUnnecessaryMessageQueue: a queue that left
        is dropped (buffered messages too) and its stored offset written out; a new one starts pulling;
        one whose pull task died is started again."""
        for mq, state in list(self._states.items()):
            if mq.topic != topic:
                continue
            died = state.task is not None and state.task.done() and not state.task.cancelled()
            if mq in mine and not died:
                continue
            self._drop(mq)
            if state.task is not None:
                await asyncio.gather(state.task, return_exceptions=True)
            await self.quietly(f"commit offset of {mq}", self.offsets.persist([mq]))
            self.offsets.remove(mq)
            log.info("%s gave up %s", self.client_id, mq)
        if topic not in self.subscriptions:  # unsubscribed meanwhile (its queues left then): none comes back
            return
        for mq in sorted(mine - set(self._states)):
            self.offsets.remove(mq)  # removeDirtyOffset
            self._add_queue(mq)

    def _announced_from_where(self) -> ConsumeFromWhere:
        return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET  # what 4.9.3's lite consumer tells the broker

    async def _heartbeat_all(self) -> None:
        """In assign mode the brokers heartbeated are those of the assigned topics' routes (re-read every
        ``route_refresh_interval_s``; a topic assigned away no longer keeps its brokers): 4.9.3 heartbeats
        every broker its pulls learnt of, with the group's consumer data even without subscriptions."""
        if self._mode is _Mode.ASSIGN and not self.stopping:
            topics = {mq.topic for mq in self._assigned}
            # one round of look-ups: once no name server answered, the other topics keep the route known
            # (with every name server hanging, one look-up timeout a round, not one per assigned topic)
            lookups = LookupRound()
            for topic in sorted(topics):
                await self._queues(topic, lookups=lookups)
            for topic in [t for t in self._route_addrs if t not in topics]:
                del self._route_addrs[topic]
        await super()._heartbeat_all()

    # --- the pull loop's hooks (rocketstore.client.pull_loop.PullOwner) -----------------------------------

    def pull_held_back(self, pq: ProcessQueue) -> bool:
        state = self._states.get(pq.mq)
        if state is None or state.paused:
            return True
        s = self.settings
        if len(self.consumption.batches) * s.pull_batch_size > s.pull_threshold_for_all:
            return True
        return flow_controlled(s, pq, check_span=True)

    def caught_up(self, mq: MessageQueue, offset: int) -> None:
        # nothing is held: every message before *offset* was polled or filtered out
        state = self._states.get(mq)
        if state is not None and state.pq.count == 0:
            state.consumed_offset = offset

    async def offset_moved(self, mq: MessageQueue, offset: int) -> None:
        """4.9.3's lite pull only moves its pull offset (the loop does); the consumed offset stays."""

    # --- poll ----------------------------------------------------------------------------------------------

    async def poll(self, timeout_s: float | None = None) -> list[ConsumedMessage]:
        """The next batch (at most ``pull_batch_size`` messages of one queue, in queue order), waiting up
        to *timeout_s* (None: the ``poll_timeout_s`` setting, 5 s) for one; [] if none came."""
        self._check_running()
        if timeout_s is None:
            timeout_s = self.settings.poll_timeout_s
        if timeout_s < 0:
            raise ValueError("timeout_s must not be negative")
        if self.settings.auto_commit:
            now = time.monotonic()
            if now >= self._next_auto_commit_s:
                self._commit_consumed()
                self._next_auto_commit_s = now + self.settings.auto_commit_interval_s
        got = await self.consumption.take(timeout_s)
        if got is None:
            return []
        pq, messages = got
        offset = pq.remove(messages)
        state = self._states.get(pq.mq)
        if state is not None and state.pq is pq and offset >= 0:
            state.consumed_offset = offset
        if self.namespace is not None:  # 4.9.3's resetTopic
            return queues_without_namespace(self.namespace, messages)
        return messages

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these held queues (what is buffered can still be polled); others are ignored.
        Before start, the queues given to ``assign`` count as held, as in 4.9.3."""
        for mq in self._in_namespace(queues):
            state = self._states.get(mq)
            if state is not None:
                state.paused = True
            elif not self.started and mq in self._assigned:
                self._paused_before_start.add(mq)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in self._in_namespace(queues):
            self._paused_before_start.discard(mq)
            state = self._states.get(mq)
            if state is not None:
                state.paused = False
                state.pq.wake()

    # --- offsets -------------------------------------------------------------------------------------------

    def _commit_consumed(self) -> None:
        """4.9.3's commitAll: each held queue's consumed offset into the offset store (memory)."""
        for mq, state in self._states.items():
            if state.consumed_offset >= 0 and not state.pq.dropped:
                self.offsets.update(mq, state.consumed_offset, increase_only=False)

    async def persist_offsets(self) -> None:
        await self.offsets.persist(list(self._states))

    async def commit_sync(self) -> None:
        """Commit every held queue's consumed offset now: to the broker (CLUSTERING) or the local offset
        file (BROADCASTING); raises if that fails."""
        self._check_running()
        self._commit_consumed()
        await self.persist_offsets()

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of *mq* as 4.9.3 reads it (MEMORY_FIRST_THEN_STORE): what this
        consumer committed, else the broker's (CLUSTERING) or the offset file's; -1 if there is none."""
        self._check_running()
        mq = queue_with_namespace(self.namespace, mq)
        offset = self.offsets.read_memory(mq)
        return offset if offset >= 0 else await self.offsets.read_store(mq)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Consume *mq* from *offset* (between its min and max offset): the buffered messages are dropped
        and its pull starts again there; the consumed offset becomes *offset*."""
        self._check_running()
        mq = queue_with_namespace(self.namespace, mq)
        if mq not in self._states:
            hint = ", may be rebalancing" if self._mode is _Mode.SUBSCRIBE else ""
            raise ClientError(f"the message queue is not in the assigned list{hint}: {mq}")
        low, high = await self.consumer.min_offset(mq), await self.consumer.max_offset(mq)
        if not low <= offset <= high:
            raise ClientError(f"seek offset illegal, seek offset = {offset}, min offset = {low}, "
                              f"max offset = {high}")
        async with self._rebalance_lock:
            state = self._states.get(mq)
            if state is None or self.stopping:
                raise ClientError(f"the message queue left the assigned list while seeking: {mq}")
            old = state.pq
            old.dropped = True
            old.wake()
            self.consumption.discard(old)
            if state.task is not None:
                state.task.cancel()
                await asyncio.gather(state.task, return_exceptions=True)
            state.pq = ProcessQueue(mq)
            state.consumed_offset = offset
            state.task = asyncio.get_running_loop().create_task(pull_loop(self, state.pq, offset))

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        self._check_running()
        mq = queue_with_namespace(self.namespace, mq)
        await self.seek(mq, await self.consumer.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        self._check_running()
        mq = queue_with_namespace(self.namespace, mq)
        await self.seek(mq, await self.consumer.max_offset(mq))

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's queues from the name servers (readable ones), sorted.  NoRouteError in 4.9.3's words
        (fetchSubscribeMessageQueues: "Can not find Message Queue for this topic, <topic>") for a topic the
        name servers do not know or whose queues are all write-only (perm 2): an empty list would have an
        assign-mode caller poll nothing, silently."""
        self._check_running()
        topic = with_namespace(self.namespace, topic)
        words = f"Can not find Message Queue for this topic, {topic}"
        try:
            queues = await self.consumer.queues(topic)
        except NoRouteError as exc:
            raise NoRouteError(topic, exc.reason, words=words) from exc
        if not queues:
            raise NoRouteError(topic, "no readable queue (the name servers return none)", words=words)
        if self.namespace is not None:
            queues = queues_without_namespace(self.namespace, queues)
        return sorted(queues)

    # --- queue-set change listeners (registerTopicMessageQueueChangeListener) ----------------------------

    async def register_topic_message_queue_change_listener(self, topic: str, listener: TopicQueuesListener) -> None:
        """Call ``listener(topic, queues)`` (a function or a coroutine function; *queues* a frozenset of
        :class:`MessageQueue`) whenever the topic's readable queues on the name servers differ from the
        last ones seen: a queue count changed, a broker joined or left.  The check runs every
        ``topic_metadata_check_interval_s`` (4.9.3: topicMetadataCheckIntervalMillis, 30 s) and on
        :meth:`check_topic_queues`; the queues at registration (or at start) are the baseline and are not
        reported.  A second listener for a topic replaces the first.  Unlike 4.9.3, a topic that has no
        queue is reported once, not at every check."""
        if not topic or listener is None:
            raise ValueError("a queue change listener needs a topic and a listener")
        topic = with_namespace(self.namespace, topic)
        self._queue_listeners[topic] = listener
        self._known_queues[topic] = await self._fetch_queue_set(topic) if self.started and not self.stopping else None

    async def check_topic_queues(self) -> None:
        """Fetch every listened topic's queues now and tell its listener of a change."""
        for topic, listener in list(self._queue_listeners.items()):
            queues = await self._fetch_queue_set(topic)
            if queues is None or queues == self._known_queues.get(topic):
                continue
            self._known_queues[topic] = queues
            if self.namespace is not None:  # named without the namespace, as the user named them
                topic = without_namespace(self.namespace, topic)
                queues = frozenset(queues_without_namespace(self.namespace, queues))
            try:
                outcome = listener(topic, queues)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:  # the listener's bug must not stop the checks
                log.exception("the queue change listener of topic %s failed", topic)

    async def _fetch_queue_set(self, topic: str) -> frozenset[MessageQueue] | None:
        what = f"the look-up of the queues of topic {topic}"  # every topic_metadata_check_interval_s
        try:
            queues = frozenset(await self.consumer.queues(topic))
        except (ClientError, RocketStoreError, OSError) as exc:
            self.failure_runs.failed(log, what, exc)
            return None
        self.failure_runs.worked(log, what)
        return queues

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The broker's SEARCH_OFFSET_BY_TIMESTAMP: the offset of the message stored nearest *timestamp_ms*
        (4.9.3's getOffsetInQueueByTime; it may be stored before that time)."""
        self._check_running()
        return await self.consumer.search_offset(queue_with_namespace(self.namespace, mq), timestamp_ms)

    # --- requests from brokers (NOTIFY_CONSUMER_IDS_CHANGED: GroupConsumer._serve) ----------------------

    def running_info(self, *, jstack: bool = False) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO, as 4.9.3's lite consumer answers it: its settings (Java's property
        names) and subscriptions, no queue table, no thread dump.  Of Java's properties, those naming
        objects (log, offsetStore, traceDispatcher, ...) and the settings ours has not (pullThreadNums,
        consumerPullTimeoutMillis) are left out; customizedTraceTopic only when set, as Java leaves a null."""
        s = self.settings
        props = {
            **self._common_properties(), "pullBatchSize": str(s.pull_batch_size),
            "pullThresholdForAll": str(s.pull_threshold_for_all), "consumeMaxSpan": str(s.consume_max_span),
            "autoCommit": "true" if s.auto_commit else "false",
            "autoCommitIntervalMillis": str(int(s.auto_commit_interval_s * 1000)),
            "brokerSuspendMaxTimeMillis": str(s.long_poll_ms),
            "consumerTimeoutMillisWhenSuspend": str(int(s.consumer_timeout_when_suspend_s * 1000)),
            "pollTimeoutMillis": str(int(s.poll_timeout_s * 1000)),
            "topicMetadataCheckIntervalMillis": str(int(s.topic_metadata_check_interval_s * 1000)),
            "enableMsgTrace": "true" if s.enable_trace else "false",
        }
        if s.trace_topic is not None:
            props["customizedTraceTopic"] = s.trace_topic
        return ConsumerRunningInfo(props, tuple(self.subscriptions.values()))
