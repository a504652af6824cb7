"""An asyncio push consumer (RocketMQ's DefaultMQPushConsumer): the group shares the queues, the client
pulls them with long polling and calls a handler with the messages.

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        ...
        return ConsumeStatus.CONSUME_SUCCESS   # current_context() may ack part of a batch, pick a delay

A handler returns a :class:`ConsumeStatus`: CONSUME_SUCCESS or RECONSUME_LATER (a concurrent consumer sends
the batch back for a delayed retry, an orderly one retries it after the queue's pause); an orderly handler
may use 4.9.3's ConsumeOrderlyStatus names, SUCCESS and SUSPEND_CURRENT_QUEUE_A_MOMENT (the same members), and
with ``auto_commit`` off COMMIT and ROLLBACK.  Anything else, or an exception, counts as RECONSUME_LATER.

    async with PushConsumer("127.0.0.1:9876", "my-group", {"TopicA": "TagA || TagB"}, handle) as consumer:
        ...   # messages flow until the block ends (shutdown: in-flight handlers finish, offsets are
              # committed; await_termination_when_shutdown_s bounds the wait for them)

What runs, and why (the Java behaviour kept):

* Heartbeats to every broker of the subscribed topics, with the subscriptions and, for CLUSTERING, the
  group's ``%RETRY%<group>`` topic ("*"), so the broker knows the group and routes retries back to it.
* Rebalance every ``rebalance_interval_s`` and at once on NOTIFY_CONSUMER_IDS_CHANGED: each member splits
  the sorted queues among the sorted client ids (:func:`allocate_averagely`); a queue that leaves stops
  being pulled, its offset is committed (orderly: after the batch in hand, then unlocked); a new queue
  starts at the committed offset or where ``consume_from_where`` says (RebalancePushImpl's rules).
* One pull loop per queue (:mod:`rocketstore.client.pull_loop`); consumption concurrent or orderly
  (:mod:`rocketstore.client.consume`).
* Offsets persisted every ``persist_interval_s`` and at shutdown: to the broker (CLUSTERING) or to
  ``<offset_dir>/<client id>/<group>/offsets.json`` (BROADCASTING; the default client id is then
  ``<ip>@DEFAULT`` as in 4.9.3, so a restart finds the same file; ``instance_name`` names another).
* Orderly CLUSTERING: queues are locked on the broker before they are consumed, the locks renewed every
  ``lock_renew_interval_s`` (the broker lets them expire) and released at shutdown.  Lock and unlock
  requests go one at a time, so a renewal cannot lock again a queue being given up (the base class
  :class:`rocketstore.client.queue_locks.QueueLocks` sends them).
* Concurrently: a message whose handler has run over ``consume_timeout_s`` is sent back (delay level 3)
  and stops holding its queue's offset back (cleanExpireMsg, checked every ``consume_timeout_s``).
* ``subscribe`` / ``unsubscribe`` work after start too (a heartbeat and a rebalance follow at once);
  ``suspend`` / ``resume`` stop and restart all pulling.

The group membership (routes, heartbeats, rebalance, offset store, where a new queue starts) is
:class:`rocketstore.client.group_consumer.GroupConsumer`'s, shared with the lite pull consumer.  The settings
(:class:`PushConsumerSettings`, DEFAULT_MAX_RECONSUME_TIMES, ...) are
:mod:`rocketstore.client.push_settings`'; every name of theirs this module had is importable from here.

Loop-bound: create, start and shut it down on one event loop.  :class:`BlockingPushConsumer` runs one in a
thread for code without a loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import threading
import time
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rocketstore.client.consume import Consumption
from rocketstore.client.consumer import MessageSelector, subscribed
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.group_consumer import resolve_settings
from rocketstore.client.namespace import queues_without_namespace, with_namespace
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.pull_loop import flow_control_reason, pull_loop
from rocketstore.client.push_settings import (  # (this module's before the split: still importable from here)
    CONSUMER_TIMEOUT_WHEN_SUSPEND_S as CONSUMER_TIMEOUT_WHEN_SUSPEND_S,
    DEFAULT_MAX_RECONSUME_TIMES as DEFAULT_MAX_RECONSUME_TIMES,
    PushConsumerSettings,
)
from rocketstore.client.push_status import push_running_info
from rocketstore.client.push_status import thread_stacks as thread_stacks  # (this module's before the split)
from rocketstore.client.push_types import ConsumedMessage, MessageHandler, retry_topic
from rocketstore.client.queue_locks import LOCK_BATCH_TIMEOUT_S as LOCK_BATCH_TIMEOUT_S  # (as above)
from rocketstore.client.queue_locks import QueueLocks
from rocketstore.client.route import MessageQueue
from rocketstore.client.trace_consumer import TracedConsumption
from rocketstore.client.trace_dispatch import TraceDispatcher
from rocketstore.errors import RocketStoreError
from rocketstore.message.inflate import inflate_body
from rocketstore.message.record import SysFlag, decode_record
from rocketstore.remoting.bodies import ConsumeType, build_subscription
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.consumer_bodies import (
    ConsumerRunningInfo,
    GetConsumerStatusBody,
    QueueKey,
    decode_reset_offset_body,
)
from rocketstore.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketstore.remoting.tls import ClientTls

__all__ = ["PushConsumer", "PushConsumerSettings"]

log = logging.getLogger(__name__)


class PushConsumer(QueueLocks):
    settings: PushConsumerSettings
    consume_type = ConsumeType.PASSIVELY
    what = "push consumer"
    kind = "PushConsumer"
    #: a pull tells the broker the queue's consumed offset too (4.9.3's commitOffsetEnable)
    commit_offset_with_pull = True
    #: a pull that times out leaves its connection open (4.9.3's pulls are async calls here)
    close_on_pull_timeout = False

    def __init__(self, namesrv_addr: str | None, group: str, subscriptions: Mapping[str, str | MessageSelector],
                 handler: MessageHandler,
                 settings: PushConsumerSettings | None = None, *, credentials: SessionCredentials | None = None,
                 tls: ClientTls = None, **settings_kw: object) -> None:
        """*namesrv_addr*: ``host:port[;host:port]``; None: the environment variable ``NAMESRV_ADDR``, as
        4.9.3's DefaultMQPushConsumer.  *subscriptions*: topic -> tag expression (``"*"`` or ``"TagA || TagB"``) or a MessageSelector
        (``MessageSelector.by_sql("a > 5")``: the broker filters by properties); *settings* or keyword
        arguments naming :class:`PushConsumerSettings` fields; *credentials*: ACL access key and secret
        every request (name servers' too) is signed with; *tls*: this consumer's own TLS switch (4.9.3's
        setUseTLS; None follows the process, see :data:`rocketstore.remoting.tls.ClientTls`), its trace's
        producer's too.  ``enable_trace=True`` (a setting) traces every message handled."""
        if not subscriptions:
            raise ValueError("a push consumer needs at least one subscription")
        _check_handler(handler)
        settings = resolve_settings(PushConsumerSettings, settings, settings_kw)
        super().__init__(namesrv_addr, group, settings, credentials, tls)
        self.orderly = settings.orderly
        version = int(time.time() * 1000)
        if self.namespace is not None:  # the topics named, in the namespace (the group is, by the base class)
            subscriptions = {with_namespace(self.namespace, t): e for t, e in subscriptions.items()}
            group = self.group
        self.subscriptions = {
            topic: subscribed(topic, expr, version) for topic, expr in subscriptions.items()}
        if self.clustering:  # copySubscription: retries come back through the group's retry topic
            self.subscriptions.setdefault(retry_topic(group), build_subscription(retry_topic(group), "*", version))
        self.process_queues: dict[MessageQueue, ProcessQueue] = {}
        #: idents of the handler pool's threads: a blocking shutdown() called from a handler must not wait
        #: for the handlers in progress (itself among them)
        self.handler_threads: set[int] = set()
        self._executor = ThreadPoolExecutor(settings.consume_concurrency, thread_name_prefix=f"consume-{group}",
                                            initializer=self._handler_thread_started)
        #: the message trace's dispatcher (None: off, and the plain Consumption is used)
        self.trace: TraceDispatcher | None = None
        if settings.enable_trace:
            self.trace = TraceDispatcher(self.namesrv_addr, group, "CONSUME", trace_topic=settings.trace_topic,
                                         credentials=credentials, tls=self.consumer.pool.tls,
                                         namesrv_domain=settings.namesrv_domain,
                                         namesrv_domain_subgroup=settings.namesrv_domain_subgroup)
            self.consumption: Consumption = TracedConsumption(self, handler, self._executor, self.trace)
        else:
            self.consumption = Consumption(self, handler, self._executor)
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._resets: set[asyncio.Task[None]] = set()
        #: orderly clustering: this consumer's LOCK_BATCH_MQ and UNLOCK_BATCH_MQ go one at a time.  A renewal
        #: in flight while a queue it names is given up would otherwise reach the broker after the unlock
        #: and lock the queue again for this consumer: the group's new owner would wait for it to expire.
        self._lock_requests = asyncio.Lock()
        #: a shutdown awaited in one of the handlers, going on after it (see :meth:`shutdown`)
        self._shutdown_task: asyncio.Task[None] | None = None
        #: broker name -> (the first error, the queues) of queues given up whose offsets could not be
        #: committed: logged as one line per broker once the rebalance (or reset) that gave them up is done
        self._uncommitted: dict[str, tuple[Exception, list[MessageQueue]]] = {}
        #: the settings flow control applies: the per-queue thresholds as the topic thresholds make them
        self._flow_settings = settings
        #: suspend() .. resume(): no queue is pulled
        self.paused = False
        #: pulls held back by the count or size threshold, and by the span (4.9.3's queueFlowControlTimes and
        #: queueMaxSpanFlowControlTimes): the first of each and every 1000th after it is logged
        self.flow_control_times = 0
        self.span_flow_control_times = 0

    def _handler_thread_started(self) -> None:
        self.handler_threads.add(threading.get_ident())

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
            await self._join_group()
        except BaseException:  # nothing may stay open behind a failed start (async with never exits)
            self.start_failed = True  # START_FAILED for good, as 4.9.3's start leaves it
            self.stopping = True
            await self._stop_queues()
            if self.trace is not None:  # a failure here must not hide why the start failed
                await self.quietly("close the trace", self.trace.close())
            await self.consumer.close()
            self._executor.shutdown(wait=False, cancel_futures=True)
            raise
        loop = asyncio.get_running_loop()
        s = self.settings
        self._background = [*self._group_tasks(), loop.create_task(self._every(s.persist_interval_s, self.persist_offsets))]
        if self.orderly and self.clustering:
            self._background.append(loop.create_task(self._every(s.lock_renew_interval_s, self.lock_all)))
        if not self.orderly:  # ConsumeMessageConcurrentlyService's cleanExpireMsg
            self._background.append(loop.create_task(self._every(s.consume_timeout_s, self._clean_expired)))

    async def shutdown(self) -> None:
        """Stop pulling, let handlers in progress finish (at most ``await_termination_when_shutdown_s``),
        commit offsets, unlock, unregister, close.  Awaited
        in one of this consumer's own async handlers (one of those it waits for) it returns at once, as
        DefaultMQPushConsumer's shutdown from a listener: the shutdown goes on in a task of its own once the
        handler is done, and a shutdown() awaited elsewhere meanwhile waits for it."""
        in_handler = self.consumption.in_handler()
        if self._shutdown_task is not None:
            if not in_handler:
                await asyncio.shield(self._shutdown_task)
            return
        if not self.started or self.stopping:
            return
        self.stopping = True
        if in_handler:  # waiting here would be the handler waiting for itself
            self._shutdown_task = asyncio.get_running_loop().create_task(self._shut_down())
            return
        await self._shut_down()

    async def _shut_down(self) -> None:
        # the loops see ``stopping`` and end at their next wake-up (woken now); they are not cancelled,
        # so a request of theirs in flight is not cut half-way
        self._wake.set()
        self._rebalance_wanted.set()
        await asyncio.gather(*self._background, *self._resets, return_exceptions=True)
        async with self._rebalance_lock:  # a rebalance in progress finishes first
            await self._stop_queues()
            await self.quietly("persist offsets", self.persist_offsets())
            if self.orderly and self.clustering:
                await self._unlock(list(self.process_queues))
            for pq in self.process_queues.values():
                pq.dropped = True
            await self._unregister_all()
        if self.trace is not None:  # what the handlers traced is sent before the connections close
            await self.quietly("send the trace", self.trace.close())
        await self.consumer.close()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _clean_expired(self) -> None:
        for pq in list(self.process_queues.values()):
            await self.consumption.clean_expired(pq)

    async def _stop_queues(self) -> None:
        """Stop the pull loops and the consumption (handlers in progress finish)."""
        pulls = list(self._pull_tasks.values())
        for task in pulls:
            task.cancel()
        await asyncio.gather(*pulls, return_exceptions=True)
        self._pull_tasks.clear()
        await self.consumption.stop(self.settings.await_termination_when_shutdown_s)

    # --- requests from brokers -----------------------------------------------------------------------

    async def _serve_more(self, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            return await self._consume_directly(request)
        if request.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
            status = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
            table = self.offset_table(status.topic) if status.group == self.group else {}
            return request.make_response(ResponseCode.SUCCESS,
                                         body=GetConsumerStatusBody(message_queue_table=table).encode())
        if request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            reset = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
            if reset.group == self.group and not self.stopping:
                task = asyncio.get_running_loop().create_task(
                    self.reset_offsets(reset.topic, decode_reset_offset_body(request.body or b"")))
                self._resets.add(task)
                task.add_done_callback(self._resets.discard)
            return None if request.is_oneway else request.make_response(ResponseCode.SUCCESS)
        return await super()._serve_more(request)

    async def _consume_directly(self, request: RemotingCommand) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        if header.consumer_group != self.group:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=(
                f"The Consumer Group <{header.consumer_group}> not exist in this consumer"))
        try:
            stored = decode_record(request.body or b"")
            if stored.sys_flag & SysFlag.COMPRESSED:  # inflated, as 4.9.3's MessageDecoder.decode does
                stored = dataclasses.replace(stored, body=inflate_body(stored.body))
        except (RocketStoreError, ValueError, zlib.error) as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"cannot decode the message: {exc}")
        message = ConsumedMessage.from_stored(stored, header.broker_name or "", self.group)
        result = await self.consumption.consume_directly(message)
        return request.make_response(ResponseCode.SUCCESS, body=result.encode())

    def running_info(self, *, jstack: bool = False) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers: settings (under Java's property names), subscriptions,
        the queues held, per-topic figures and, if asked, the stacks of this process's threads."""
        return push_running_info(self, jstack=jstack)

    # --- subscriptions ----------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Consume *topic* too (before or after start), or replace its expression, as 4.9.3's subscribe:
        the brokers learn it from a heartbeat sent at once and its queues are shared out by the rebalance
        that follows (a replaced expression applies from the next pull)."""
        if not topic:
            raise ValueError("topic must not be empty")
        topic = with_namespace(self.namespace, topic)
        self.subscriptions[topic] = subscribed(topic, expression, int(time.time() * 1000))
        self._resubscribed()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming *topic*: the next rebalance (woken now) gives up its queues, as 4.9.3's
        truncateMessageQueueNotMyTopic drops them (their offsets are committed here first)."""
        if self.subscriptions.pop(with_namespace(self.namespace, topic), None) is None:
            return
        self._resubscribed()

    def suspend(self) -> None:
        """Stop pulling until :meth:`resume` (messages already pulled are still handled; the group's
        rebalances and commits go on), as 4.9.3's suspend."""
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        for pq in self.process_queues.values():
            pq.wake()

    # --- rebalance ------------------------------------------------------------------------------------

    async def rebalance(self) -> None:
        try:
            await super().rebalance()
            async with self._rebalance_lock:  # truncateMessageQueueNotMyTopic
                for mq, pq in list(self.process_queues.items()):
                    if mq.topic not in self.subscriptions and not self.stopping:
                        pq.dropped = True
                        pq.wake()
                        if await self._release(mq, pq):
                            del self.process_queues[mq]
                self._apply_topic_thresholds()
        finally:
            self._log_uncommitted()

    def _apply_topic_thresholds(self) -> None:
        """RebalancePushImpl.messageQueueChanged: a topic threshold, divided among the queues held."""
        s, held = self.settings, len(self.process_queues)
        if held == 0 or (s.pull_threshold_for_topic == -1 and s.pull_threshold_bytes_for_topic == -1):
            return
        changes: dict[str, Any] = {}
        if s.pull_threshold_for_topic != -1:
            changes["pull_threshold_for_queue"] = max(1, s.pull_threshold_for_topic // held)
        if s.pull_threshold_bytes_for_topic != -1:
            changes["pull_threshold_bytes_for_queue"] = max(1 << 20, s.pull_threshold_bytes_for_topic // held)
        self._flow_settings = dataclasses.replace(self._flow_settings, **changes)

    def assignment(self, topic: str | None = None) -> set[MessageQueue]:
        """The queues this consumer owns now (of *topic*, or all), named without the namespace."""
        topic = None if topic is None else with_namespace(self.namespace, topic)
        held = [mq for mq, pq in self.process_queues.items()
                if not pq.dropped and (topic is None or mq.topic == topic)]
        return set(held if self.namespace is None else queues_without_namespace(self.namespace, held))

    # --- the pull loop's hooks (rocketstore.client.pull_loop.PullOwner) -----------------------------------

    def pull_held_back(self, pq: ProcessQueue) -> bool:
        # paused, or the topic unsubscribed (the rebalance gives the queue up): 4.9.3 pulls later too
        if self.paused or pq.mq.topic not in self.subscriptions:
            return True
        reason = flow_control_reason(self._flow_settings, pq, check_span=not self.orderly)
        if reason is None:
            return False
        self._note_flow_control(reason, pq)
        return True

    def _note_flow_control(self, reason: str, pq: ProcessQueue) -> None:
        """Count a pull held back for *reason*; log the first and every 1000th, as 4.9.3's pullMessage does
        (a slow handler otherwise stalls a queue without a word: 20 checks a second would flood the log)."""
        if reason == "span":
            times = self.span_flow_control_times
            self.span_flow_control_times += 1
        else:
            times = self.flow_control_times
            self.flow_control_times += 1
        if times % 1000:
            return
        s = self._flow_settings
        limit = {"count": f"the cached message count exceeds the threshold {s.pull_threshold_for_queue}",
                 "size": f"the cached message size exceeds the threshold {s.pull_threshold_bytes_for_queue}B",
                 "span": f"the held offsets span more than {s.consume_max_span}"}[reason]
        log.warning("%s: %s, so do flow control on %s: minOffset=%s, maxOffset=%s, count=%d, size=%d B, "
                    "flowControlTimes=%d", self.group, limit, pq.mq, next(iter(pq.messages), "-"),
                    next(reversed(pq.messages), "-"), pq.count, pq.body_bytes, times + 1)

    def caught_up(self, mq: MessageQueue, offset: int) -> None:
        self.offsets.update(mq, offset, increase_only=True)

    async def offset_moved(self, mq: MessageQueue, offset: int) -> None:
        # 4.9.3's PullCallback on OFFSET_ILLEGAL drops the process queue, commits the new offset and lets the
        # rebalance take the queue again with a fresh ProcessQueue.  Going on with the old one would keep its
        # queue_offset_max: after a move backwards (a topic deleted and created again, a queue rebuilt
        # shorter) every commit would be the old queue's end, and the group's next consumer skip up to it.
        pq = self.process_queues.get(mq)
        if pq is not None:
            pq.dropped = True  # the pull loop ends on its return from here
            pq.wake()
        self.offsets.update(mq, offset, increase_only=False)
        await self._persist_one(mq)
        self._rebalance_wanted.set()

    def _pull_stalled(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """The queue's pull loop died or has not come round for pull_max_idle_s: RocketMQ's rebalance drops
        such a queue ("pull is pause") so that the same pass takes it again with a new pull loop."""
        task = self._pull_tasks.get(mq)
        stalled = (task is not None and task.done()) or pq.pull_expired(self.settings.pull_max_idle_s)
        if stalled:
            log.warning("%s: the pull of %s stalled (last pull %.0f s ago): dropped and taken again",
                        self.client_id, mq, time.monotonic() - pq.last_pull_s)
        return stalled

    async def _update_assignment(self, topic: str, mine: set[MessageQueue]) -> None:
        for mq, pq in list(self.process_queues.items()):
            # a queue dropped earlier whose release had to wait is released now, and re-added if it is ours
            if mq.topic == topic and (mq not in mine or pq.dropped or self._pull_stalled(mq, pq)):
                pq.dropped = True
                pq.wake()
                if await self._release(mq, pq):
                    del self.process_queues[mq]
        for mq in sorted(mine - set(self.process_queues)):
            if self.orderly and self.clustering and mq not in (await self._lock([mq]))[0]:
                continue  # another member still holds it; the next rebalance tries again
            self.offsets.remove(mq)  # removeDirtyOffset
            what = f"the look-up of where to pull {mq} from"  # again at each rebalance while it fails
            try:
                offset = await self.compute_pull_from_where(mq)
            except (RocketStoreError, OSError) as exc:
                self.failure_runs.failed(log, what, exc)
                continue
            self.failure_runs.worked(log, what)
            pq = ProcessQueue(mq)
            if self.orderly and self.clustering:
                pq.locked, pq.last_lock_s, pq.previously_locked = True, time.monotonic(), True
            self.process_queues[mq] = pq
            self._pull_tasks[mq] = asyncio.get_running_loop().create_task(pull_loop(self, pq, offset))
            self.consumption.queue_added(pq)
            log.info("%s now consumes %s from offset %d", self.client_id, mq, offset)

    async def _release(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """removeUnnecessaryMessageQueue: stop pulling, commit, (orderly) unlock; False to retry later."""
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self.orderly and self.clustering:
            try:  # the batch in hand finishes (and commits) first
                async with asyncio.timeout(1.0):
                    await pq.consume_lock.acquire()
            except TimeoutError:
                pq.try_unlock_times += 1
                return False
            try:
                await self._persist_released(mq)
                await self._unlock([mq])
            finally:
                pq.consume_lock.release()
        else:
            await self._persist_released(mq)
        self.consumption.queue_removed(pq)
        self.offsets.remove(mq)
        log.info("%s gave up %s", self.client_id, mq)
        return True

    # --- offsets ----------------------------------------------------------------------------------------

    async def reset_offsets(self, topic: str, table: Mapping[QueueKey, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (mqadmin resetOffsetByTime through the broker), as
        MQClientInstance.resetOffset: each queue of *topic* in *table* that this consumer holds stops (what
        it has in hand is not committed; an orderly batch being handled finishes before the queue is
        unlocked), takes its new offset (committed at once) and is pulled again from there by the rebalance
        that follows."""
        async with self._rebalance_lock:
            for mq, pq in list(self.process_queues.items()):
                offset = table.get((mq.topic, mq.broker_name, mq.queue_id))
                if mq.topic != topic or offset is None:
                    continue
                pq.dropped = True
                pq.wake()
                task = self._pull_tasks.pop(mq, None)
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                self.offsets.update(mq, offset, increase_only=False)
                # committed, then (orderly) unlocked only once the batch in hand is done, as a rebalance
                # releases a queue: a queue unlocked, or taken again, under a busy handler would be handled
                # twice at once.  Still busy: it stays, dropped, for the next rebalance to release.
                if await self._release(mq, pq):
                    del self.process_queues[mq]
                else:
                    await self._persist_one(mq)
                log.info("%s reset %s to offset %d", self.client_id, mq, offset)
            self._log_uncommitted()
        self._rebalance_wanted.set()

    def offset_table(self, topic: str | None = None) -> dict[QueueKey, int]:
        """The offsets this consumer holds in memory (of *topic*, or all when blank), as it answers
        GET_CONSUMER_STATUS_FROM_CLIENT (the Java client's OffsetStore.cloneOffsetTable)."""
        table: dict[QueueKey, int] = {}
        for mq in list(self.process_queues):
            if topic and topic.strip() and mq.topic != topic:
                continue
            offset = self.offsets.read_memory(mq)
            if offset >= 0:
                table[(mq.topic, mq.broker_name, mq.queue_id)] = offset
        return table

    async def persist_offsets(self) -> None:
        await self.offsets.persist([mq for mq, pq in self.process_queues.items() if not pq.dropped]
                                   if not self.stopping else list(self.process_queues))

    async def _persist_one(self, mq: MessageQueue) -> None:
        await self.quietly(f"commit offset of {mq}", self.offsets.persist([mq]))

    async def _persist_released(self, mq: MessageQueue) -> None:
        """Commit the offset of a queue being given up; a failure is noted for :meth:`_log_uncommitted` (a
        broker gone fails every queue of it: one line for them all, not one per queue)."""
        try:
            await self.offsets.persist([mq])
        except (RocketStoreError, OSError) as exc:
            self._uncommitted.setdefault(mq.broker_name, (exc, []))[1].append(mq)

    def _log_uncommitted(self) -> None:
        failures, self._uncommitted = self._uncommitted, {}
        for broker_name, (exc, mqs) in sorted(failures.items()):
            queues = ", ".join(f"{mq.topic}:{mq.queue_id}" for mq in mqs)
            log.warning("%s: the offsets of %d queue(s) of broker %s given up were not committed (%s): %s",
                        self.group, len(mqs), broker_name, queues, exc)


def _check_handler(handler: object) -> None:
    """A TypeError now, at construction, for a handler that cannot be called as ``handler(messages)``: a Java
    listener's ``(msgs, context)`` would otherwise fail on every message, each failure a retry, and after
    16 of them the message is in the DLQ.  Callables whose signature Python cannot tell pass."""
    if not callable(handler):
        raise TypeError(f"the handler must be callable as handler(messages), not a {type(handler).__name__}")
    try:
        # (not through __wrapped__: a decorator that supplies the context takes the messages alone)
        signature = inspect.signature(handler, follow_wrapped=False)
    except (TypeError, ValueError):
        return
    try:
        signature.bind([])
    except TypeError as exc:
        raise TypeError(f"the handler {getattr(handler, '__qualname__', handler)!r} cannot be called as "
                        f"handler(messages): {exc} (the context of 4.9.3's listeners is current_context() "
                        "inside the call)") from None
