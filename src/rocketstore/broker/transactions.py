"""Transactional messages: half messages, END_TRANSACTION (37) and the check service that asks producers
about transactions left open (CHECK_TRANSACTION_STATE, 39).  RocketMQ 4.9.3's TransactionalMessageBridge,
TransactionalMessageServiceImpl, EndTransactionProcessor and TransactionalMessageCheckService, read for
their behaviour (remoting.md 5.11 / 5.12, store-format.md section 10).

* A send whose properties say ``TRAN_MSG=true`` is stored as a *half message*: topic
  RMQ_SYS_TRANS_HALF_TOPIC, queue 0, transaction bits of the sysFlag cleared, REAL_TOPIC / REAL_QID added
  (and WAIT kept in its properties string, as the Java broker re-adds it before serialising).  The send's
  answer names the queue asked for and the half message's queue offset, which the producer hands back as
  ``tranStateTableOffset``.  Consumers never see it.
* END_TRANSACTION looks the half message up by ``commitLogOffset`` and checks it (producer group, queue
  offset, commitlog offset).  COMMIT writes the final message to the real topic and queue (sysFlag COMMIT,
  preparedTransactionOffset = the half's offset, the half's properties string unchanged: TRAN_MSG, PGROUP,
  REAL_TOPIC and REAL_QID stay in it, as in the records 4.9.3 writes); ROLLBACK writes nothing there.
  Either way an *op record* follows in RMQ_SYS_TRANS_OP_HALF_TOPIC (same queue id, tag ``d``, body the half
  message's queue offset in decimal) so the check service knows the half message is done.  UNKNOWN (0) is
  ignored.
* The check service runs every ``transaction_check_interval_ms``.  Its progress is two consumer offsets of
  group CID_RMQ_SYS_TRANS (half queue, op queue) in consumerOffset.json, as RocketMQ keeps them, so either
  broker can take over a store.  From the half offset on, a half message with an op record is done; one
  younger than ``transaction_timeout_ms`` (or its CHECK_IMMUNITY_TIME_IN_SECONDS) ends the scan; one checked
  ``transaction_check_max`` times (TRANSACTION_CHECK_TIMES) or older than the store's file reserved time is
  moved to TRANS_CHECK_MAX_TIME_TOPIC; any other is written again at the end of the half queue with its
  check count raised, and a producer of its group (PGROUP) connected to this broker is sent
  CHECK_TRANSACTION_STATE about that new copy (oneway: its answer is an END_TRANSACTION).  Like 4.9.3 the
  copy carries neither the message flag nor the reconsume count.  Unlike 4.9.3, a half message found before
  a newer copy of the same transaction (UNIQ_KEY and born time) that this broker wrote for a check is passed
  over: such stale copies are what a kill -9 before the check offset was saved leaves behind, and checking
  each of them commits the message once per copy.  Nor is a copy of an immune half message
  (CHECK_IMMUNITY_TIME_IN_SECONDS) checked once its immunity is over when an op record read in the round
  names its first offset: 4.9.3 looks for that record only while the immunity lasts, and checks (so commits
  again) a transaction that ended after a round had copied it.  Likewise a copy of any transaction whose
  END_TRANSACTION named a half message the scan had already passed (a local transaction that outlasted
  transactionTimeOut, its check answered UNKNOW meanwhile) is passed over, not checked and committed again.
* A half message or op record damaged on disk since it was stored (its body fails its CRC, or it does not
  decode) is passed over with an ERROR naming it, and the round goes on.  A damaged half message is never
  copied or checked (a copy would carry its changed body under a fresh CRC); a damaged op record's half
  offset is not trusted, so the half message it named is asked about again.  4.9.3 reads both unchecked.

Masters only.  Loop-bound: everything here runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import TYPE_CHECKING

from rocketstore.broker.query import damaged_remark
from rocketstore.broker.task_service import TaskService
from rocketstore.errors import MessageDecodeError, RocketStoreError
from rocketstore.message.host import HostAddress
from rocketstore.message.java_numbers import java_int_problem, number_format_remark, parse_java_int
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message, StoredMessage, SysFlag, decode_record, encode_record
from rocketstore.remoting.bodies import Perm
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.header_fields import HeaderFieldError
from rocketstore.remoting.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.store.config import BrokerRole
from rocketstore.store.results import GetMessageStatus, GetResult, PutMessageStatus, PutResult

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["CHECK_GROUP", "CHECK_MAX_TIME_TOPIC", "HALF_TOPIC", "OP_TOPIC", "REMOVE_TAG", "TransactionCheckService",
           "half_message", "register"]

log = logging.getLogger(__name__)

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
#: the consumer group whose offsets record how far the check service has come (MixAll.CID_SYS_RMQ_TRANS)
CHECK_GROUP = "CID_RMQ_SYS_TRANS"
#: the op record's tag: the half message is done (committed or rolled back)
REMOVE_TAG = "d"
#: op records read per store call
_OP_BATCH = 32

_TX_MASK = SysFlag.TRANSACTION_MASK
_COMMIT = SysFlag.TRANSACTION_COMMIT_TYPE
_ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE
_SUCCESS_STATUSES = frozenset({PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                               PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE})
_ILLEGAL = ("The message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
            "msg properties length limit 32k.")
#: the remark of a successful rollback's answer, as 4.9.3 sends it
_ROLLBACK_REMARK = "not set any response code"
#: an unsuccessful final put -> (response code, remark), as EndTransactionProcessor.sendFinalMessage answers
_PUT_FAILURES: dict[PutMessageStatus, tuple[int, str]] = {
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."),
    PutMessageStatus.OS_PAGECACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _count_read(broker: Broker, topic: str, got: GetResult) -> None:
    """A read of the check in the broker's figures (statsAll's CID_RMQ_SYS_TRANS row, the runtime info's get
    rates and totals), as 4.9.3 counts the reads of its transaction check."""
    broker.stats.read_internally(CHECK_GROUP, topic, got.status is GetMessageStatus.FOUND, got.message_count,
                                 got.buffer_total_bytes)


def half_message(topic: str, queue_id: int, body: bytes, properties: dict[str, str], flag: int, sys_flag: int,
                 born_timestamp: int, born_host: HostAddress | None, store_host: HostAddress | None,
                 reconsume_times: int) -> Message:
    """The half message a transactional send is stored as.  *properties* are the send's as the broker
    stores them (CLUSTER added); WAIT, if sent, goes last, where the Java broker puts it back before the
    half message's properties string is made.

    A DELAY level above 0 is dropped, as RocketMQ's Java client drops it from a transactional message before
    sending.  The C++ client sends it; a 4.9.3 broker then files the half message in SCHEDULE_TOPIC_XXXX, where
    END_TRANSACTION cannot end it and the schedule service discards it: the message is lost.  Here it is
    stored and committed like a Java client's, at once.  A level of 0 or less stays, as in 4.9.3's half and
    committed records: the Java client keeps the DELAY=0 that setDelayTimeLevel(0) puts (send.py has
    refused a DELAY that is no Java int before this)."""
    props = dict(properties)
    if int(props.get(PropertyName.DELAY) or 0) > 0:
        del props[PropertyName.DELAY]
    wait = props.pop(PropertyName.WAIT, None)
    if wait is not None:
        props[PropertyName.WAIT] = wait
    props[PropertyName.REAL_TOPIC] = topic
    props[PropertyName.REAL_QID] = str(queue_id)
    return Message(HALF_TOPIC, body, props, 0, flag, sys_flag & ~_TX_MASK, born_timestamp, born_host, store_host,
                   reconsume_times)


def _op_message(half: StoredMessage, store_host: HostAddress | None) -> Message:
    """The op record saying *half* is done.  Its properties string holds TAGS and WAIT only: 4.9.3 sets the
    unique key after serialising the properties, so it never reaches the record."""
    props = {PropertyName.TAGS: REMOVE_TAG, PropertyName.WAIT: "true"}
    return Message(OP_TOPIC, str(half.queue_offset).encode(), props, half.queue_id, 0, 0, _now_ms(), store_host,
                   store_host, 0)


def _final_message(half: StoredMessage, commit_log_offset: int) -> Message | str:
    """The committed message: the half message back in its real topic and queue; else what 4.9.3 answers
    (SYSTEM_ERROR): the NumberFormatException of a REAL_QID or DELAY that Integer.parseInt refuses (its
    endMessageTransaction and CommitLog read them so), or that the half message has no REAL_TOPIC / REAL_QID."""
    props = half.properties
    topic = props.get(PropertyName.REAL_TOPIC)
    real_qid = props.get(PropertyName.REAL_QID)
    if not topic or real_qid is None:
        return "Find prepared transaction message failed"
    try:
        queue_id = parse_java_int(real_qid)
    except ValueError:
        return number_format_remark(real_qid)
    problem = java_int_problem(props.get(PropertyName.DELAY))
    if problem is not None:
        return problem
    return Message(topic, half.body, props, queue_id, half.flag, (half.sys_flag & ~_TX_MASK) | _COMMIT,
                   half.born_timestamp, half.born_host, half.store_host, half.reconsume_times, commit_log_offset)


def _half_problem(half: StoredMessage | None, h: EndTransactionRequestHeader) -> str | None:
    """EndTransactionProcessor.checkPrepareMessage: why *half* is not the message *h* ends, or None."""
    if half is None or half.topic != HALF_TOPIC:
        return "Find prepared transaction message failed"
    if half.properties.get(PropertyName.PGROUP) != h.producer_group:
        return "The producer group wrong"
    if half.queue_offset != h.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != h.commit_log_offset:
        return "The commit log offset wrong"
    return None


def register(router: RequestRouter, broker: Broker) -> None:
    async def end_transaction(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        h = EndTransactionRequestHeader.from_ext_fields(request.ext_fields)
        kind = h.commit_or_rollback
        if kind not in (0, _COMMIT, _ROLLBACK):
            # 4.9.3's EndTransactionRequestHeader.checkFields refuses any other number as the header is read:
            # SYSTEM_ERROR (unanswered when oneway, as every failed request), the half message left open
            raise HeaderFieldError("commitOrRollback", "field wrong", str(kind))
        if broker.store_config.broker_role == BrokerRole.SLAVE:
            return request.make_response(ResponseCode.SLAVE_NOT_AVAILABLE)
        if kind == 0:
            # UNKNOWN: the producer does not know yet; the check service will ask again
            log.info("producer %s ended transaction %s as unknown%s", conn.peer_address, h.msg_id,
                     " (answering a check)" if h.from_transaction_check else "")
            return None
        try:
            half = broker.store.message_at(h.commit_log_offset)
        except MessageDecodeError as exc:  # the half message stays open: no damaged body goes to the topic
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=damaged_remark(exc))
        problem = _half_problem(half, h)
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        assert half is not None
        if kind == _ROLLBACK:
            await broker.transactions.write_op(half)
            # 4.9.3 answers a rollback with its checks' response turned SUCCESS, keeping the remark a Java
            # response starts with (a commit's answer is the final put's, without one)
            return request.make_response(ResponseCode.SUCCESS, remark=_ROLLBACK_REMARK)
        final = _final_message(half, h.commit_log_offset)
        if isinstance(final, str):  # the half message stays open: the check service asks about it again
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=final)
        result = await broker.put(final, wait=False)
        if result.status in _SUCCESS_STATUSES:
            await broker.transactions.write_op(half)
            return request.make_response(ResponseCode.SUCCESS)
        code, remark = _PUT_FAILURES.get(result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
        return request.make_response(code, remark=remark)

    async def resume_check(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """RESUME_CHECK_HALF_MESSAGE (mqadmin resumeCheckHalfMessage): the message an offset message id
        names (usually one given up in TRANS_CHECK_MAX_TIME_TOPIC) goes back to the half queue with its check
        count at 0, so the check service asks its producer again."""
        msg_id = request.ext_fields.get("msgId") or ""
        try:
            _, offset = decode_offset_message_id(msg_id)
        except RocketStoreError:
            message = None
        else:
            try:
                message = broker.store.message_at(offset)
            except MessageDecodeError as exc:
                return request.make_response(ResponseCode.SYSTEM_ERROR, remark=damaged_remark(exc))
        if message is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=(
                "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."))
        props = message.properties
        props[PropertyName.TRANSACTION_CHECK_TIMES] = "0"
        again = Message(HALF_TOPIC, message.body, props, 0, message.flag, message.sys_flag, message.born_timestamp,
                        message.born_host, message.store_host, message.reconsume_times)
        result = await broker.put(again, wait=False)
        if result.status is not PutMessageStatus.PUT_OK:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark="Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        return request.make_response(ResponseCode.SUCCESS)

    router.add(RequestCode.END_TRANSACTION, end_transaction)
    router.add(RequestCode.RESUME_CHECK_HALF_MESSAGE, resume_check)


#: how many copied half messages' keys a half queue keeps for _ended_late_keys (a bound on memory: a
#: late END_TRANSACTION for an older one is checked again from its copy, as in 4.9.3)
_COPIED_KEPT = 100_000


class TransactionCheckService(TaskService):
    """The op records' writer and the periodic check of open half messages (see the module docstring)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._round_robin = itertools.count()
        #: check requests sent
        self.checks_sent = 0
        #: half queue id -> (UNIQ_KEY, born timestamp) -> queue offset of the copy this broker last wrote
        #: for a check of it
        self._latest_copy: dict[int, dict[tuple[str, int], int]] = {}
        #: half queue id -> (UNIQ_KEY, born timestamp) of a transaction ended by an END_TRANSACTION naming a
        #: half message the scan had passed -> the queue's end when its op record was read (_ended_late_keys)
        self._ended_late: dict[int, dict[tuple[str, int], int]] = {}
        #: half queue id -> queue offset of a half message this broker copied for a check -> its (UNIQ_KEY,
        #: born timestamp): an op record naming one of these once the scan has passed it ended a transaction
        #: whose copy is still ahead (at most _COPIED_KEPT per queue, the oldest dropped first; forgotten once
        #: the transaction has no copy ahead: _forget_finished_copies)
        self._copied: dict[int, dict[int, tuple[str, int]]] = {}

    #: set by :meth:`interval_changed` while the service runs (made on its loop)
    _interval_changed: asyncio.Event | None = None

    def interval_changed(self) -> None:
        """transactionCheckInterval changed (UPDATE_BROKER_CONFIG): the wait under way starts again with the
        new interval.  4.9.3 reads the interval before each wait, so a shorter one acted only after the
        old one (60 s by default) had passed."""
        if self._interval_changed is not None:
            self._interval_changed.set()

    async def _run(self) -> None:
        changed = self._interval_changed = asyncio.Event()
        while True:
            try:  # the interval is read for each wait, as 4.9.3's check service reads it
                async with asyncio.timeout(self.broker.config.transaction_check_interval_ms / 1000):
                    await changed.wait()
            except TimeoutError:
                pass
            else:
                changed.clear()
                continue
            try:
                await self.check()
            except Exception:  # a failed round is logged; the next one starts from the saved offsets
                log.exception("transaction check failed")

    async def write_op(self, half: StoredMessage) -> bool:
        result = await self.broker.put(_op_message(half, self.broker.store_host), wait=False)
        if result.status is not PutMessageStatus.PUT_OK:
            log.error("cannot write the op record of half message %s: %s", half.msg_id, result.status.name)
            return False
        return True

    # --- the check ------------------------------------------------------------------------------------

    async def check(self) -> None:
        """One round over every half queue.  It starts once the dispatcher has caught up (waiting up to a
        second): op records of transactions ended before the round are then in their queue, and their half
        messages are not asked about again.  (4.9.3 starts at once and may ask again; the answer is the same.)"""
        broker = self.broker
        if broker.store.dispatch_behind_bytes:
            await broker.run_blocking(broker.store.wait_dispatched, 1.0)
        tc = broker.topics.get(HALF_TOPIC)
        if tc is None:  # as fetchMessageQueues: the half topic's config is made on the first round
            tc = broker.topics.create_retry_or_dlq(HALF_TOPIC, 1, Perm.READ | Perm.WRITE)
            broker.topic_created()
        for queue_id in range(tc.read_queue_nums):
            await self._check_queue(queue_id)

    def _start_offset(self, topic: str, queue_id: int) -> int:
        offset = self.broker.offsets.query(CHECK_GROUP, topic, queue_id)
        return offset if offset >= 0 else self.broker.store.min_offset(topic, queue_id)

    def correct_offsets(self) -> None:
        """Called once at start, before the broker serves: a saved check offset past its queue's end (the
        commitlog's tail lost in a crash after the offset was saved, and the queue cut back with it) is
        saved again as the end, where the next half message or op record lands.  Left as it was, the
        halves written from the end up to the old offset would never be checked.  (4.9.3 finds this during
        a round and goes back to 0 when the queue starts at 0, asking again about transactions already
        ended, whose answers write their messages a second time.)"""
        broker, store = self.broker, self.broker.store
        if store.dispatch_behind_bytes:
            store.wait_dispatched(5.0)  # the queue ends are where recovery left them, not before
        for topic in (HALF_TOPIC, OP_TOPIC):
            for queue_id, offset in broker.offsets.offsets(CHECK_GROUP, topic).items():
                end = store.max_offset(topic, queue_id)
                if offset > end:
                    log.warning("the check offset %d of %s queue %d is past the queue's end %d: going on from "
                                "the end", offset, topic, queue_id, end)
                    broker.offsets.commit(CHECK_GROUP, topic, queue_id, end)

    def _read_ops(self, queue_id: int, op_offset: int, half_offset: int
                  ) -> tuple[dict[int, int], list[int], set[int]]:
        """Every op record from *op_offset* on: (half queue offset -> op queue offset) for halves not yet
        passed, the op offsets of records about halves before *half_offset* (done), and those halves."""
        store = self.broker.store
        removed: dict[int, int] = {}
        done: list[int] = []
        done_halves: set[int] = set()
        offset = op_offset
        while True:
            got = store.get(OP_TOPIC, queue_id, offset, _OP_BATCH)
            _count_read(self.broker, OP_TOPIC, got)
            if got.status is not GetMessageStatus.FOUND:
                if got.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                                  GetMessageStatus.OFFSET_FOUND_NULL) and got.next_begin_offset != offset:
                    offset = got.next_begin_offset
                    continue
                return removed, done, done_halves
            for op_offset_of, record in zip(got.queue_offsets, got.records):
                try:
                    op = decode_record(record, check_crc=True)
                except MessageDecodeError as exc:
                    # damaged on disk: its body's half offset cannot be trusted, and it never reads better.
                    # Passed over for good (the op offset may go past it), the half message it may name is
                    # asked about once more; taken at its word, a changed digit ends another one unasked
                    log.error("op record %s queue %d queue offset %d is damaged and passed over: %s",
                              OP_TOPIC, queue_id, op_offset_of, exc.reason)
                    done.append(op_offset_of)
                    continue
                # a record this broker did not write (a client may send to the op topic) names no half
                # message: passed over for good, or the op offset stopped at it and every round read the
                # queue again from there, logging it each time (4.9.3 passes a body that is no number)
                if op.tags != REMOVE_TAG:
                    log.error("op record at %d of %s has tag %r, not %r: passed over", op_offset_of, OP_TOPIC,
                              op.tags, REMOVE_TAG)
                    done.append(op_offset_of)
                    continue
                try:
                    half_offset_of = int(op.body)
                except ValueError:
                    log.error("op record at %d of %s has body %r: passed over", op_offset_of, OP_TOPIC,
                              op.body[:40])
                    done.append(op_offset_of)
                    continue
                if half_offset_of < half_offset:
                    done.append(op_offset_of)
                    done_halves.add(half_offset_of)
                else:
                    removed[half_offset_of] = op_offset_of
            offset = got.next_begin_offset

    async def _check_queue(self, queue_id: int) -> None:
        broker, store, cfg = self.broker, self.broker.store, self.broker.config
        start_ms = _now_ms()
        # the round ends where the queue ended when it began: what lies further on (this round's own copies
        # above all) waits for the next one.  4.9.3 tells them by a store time at or after the round's start
        # only (below), which a wall clock stepped back during the round defeats: the scan then reaches the
        # copies it wrote, checks them again and again and gives each message up (transactionCheckMax)
        # within one round, before its producer could answer
        end = store.max_offset(HALF_TOPIC, queue_id)
        half_offset = self._start_offset(HALF_TOPIC, queue_id)
        op_offset = self._start_offset(OP_TOPIC, queue_id)
        removed, done, done_halves = self._read_ops(queue_id, op_offset, half_offset)
        latest = self._stale_copies(queue_id, half_offset)
        ended = self._ended_late_keys(queue_id, half_offset, end, done_halves)
        self._forget_finished_copies(queue_id, latest)
        reserved_ms = store.config.file_reserved_time_h * 3600 * 1000
        i = new_offset = half_offset
        while i < end:
            if i in removed:
                done.append(removed.pop(i))
                done_halves.add(i)  # for the copies of it further on, if it was immune (_ended_first)
                i = new_offset = i + 1
                continue
            got = store.get(HALF_TOPIC, queue_id, i, 1)
            _count_read(broker, HALF_TOPIC, got)
            if got.status is not GetMessageStatus.FOUND:
                if got.next_begin_offset > i:  # a hole (a removed segment): go on from where the queue resumes
                    i = new_offset = got.next_begin_offset
                    continue
                break
            try:
                [half] = got.messages
            except MessageDecodeError as exc:  # never copied: the copy would carry its changed body as intact
                log.error("half message %s queue %d queue offset %d is damaged and passed over: %s",
                          HALF_TOPIC, queue_id, i, exc.reason)
                i = new_offset = i + 1
                continue
            except ValueError:
                log.exception("unreadable half message at queue offset %d", i)
                i = new_offset = i + 1
                continue
            props = half.properties
            uniq = props.get(PropertyName.UNIQ_KEY)
            # the born time tells a copy (which keeps it) from another send with the same UNIQ_KEY (a Java
            # Message object sent again keeps its key; each send has its own born time): that one is its own
            # transaction, and passing it over would leave it unchecked for good
            copy_key = None if uniq is None else (uniq, half.born_timestamp)
            if copy_key is not None and ended.get(copy_key, -1) > i:
                # a copy of a transaction already ended: its END named an earlier copy (or the half message
                # itself) after the scan had passed it, as when the local transaction outlasts
                # transactionTimeOut and commits after a check was answered UNKNOW.  4.9.3 checks this copy;
                # the producer answers COMMIT and the message is written to its topic a second time
                i = new_offset = i + 1
                continue
            if copy_key is not None and latest.get(copy_key, -1) > i:
                # a stale copy: a later copy of this transaction, written by this broker for a check, is
                # further on in the queue and carries it on (see _stale_copies)
                i = new_offset = i + 1
                continue
            now = _now_ms()
            times_text = props.get(PropertyName.TRANSACTION_CHECK_TIMES)
            times = _long(times_text) if times_text is not None else 0
            # as needDiscard: a count is compared only once there is one (a first check always happens);
            # then raised, before needSkip gives up on a message older than the files are kept, whose
            # discarded copy so carries the raised count
            discard = times_text is not None and times >= cfg.transaction_check_max
            if not discard:
                props[PropertyName.TRANSACTION_CHECK_TIMES] = str(times + 1)
                discard = now - half.born_timestamp > reserved_ms
            if discard:
                await self._discard(half, props)
                i = new_offset = i + 1
                continue
            if half.store_timestamp >= start_ms:
                break  # written during this round
            age = now - half.born_timestamp
            immunity_text = props.get(PropertyName.CHECK_IMMUNITY_TIME_IN_SECONDS)
            if immunity_text is not None:
                seconds = _long(immunity_text)
                immunity = cfg.transaction_timeout_ms if seconds == -1 else seconds * 1000
                if age < immunity:
                    if not await self._pass_immune(half, props, removed, done, done_halves):
                        break
                    i = new_offset = i + 1
                    continue
            elif 0 <= age < cfg.transaction_timeout_ms:
                break  # too young to ask about; so is everything after it
            if self._ended_first(props, removed, done, done_halves):
                # a copy an earlier round made of an immune half message whose transaction ended since
                # (the op record names its first offset): 4.9.3 checks it once the immunity is over, and
                # a producer whose transaction committed answers COMMIT, writing the message a second time
                i = new_offset = i + 1
                continue
            copy = await self._put_back(half, props)
            if copy is None:
                break  # try again next round
            if copy_key is not None:
                latest[copy_key] = copy.queue_offset
                copied = self._copied.setdefault(queue_id, {})
                copied[i] = copy_key
                if len(copied) > _COPIED_KEPT:
                    del copied[next(iter(copied))]
            self._send_check(half, props, copy)
            i = new_offset = i + 1
        if new_offset != half_offset:
            broker.offsets.commit(CHECK_GROUP, HALF_TOPIC, queue_id, new_offset)
        new_op_offset = op_offset
        for offset in sorted(done):
            if offset != new_op_offset:
                break
            new_op_offset += 1
        if new_op_offset != op_offset:
            broker.offsets.commit(CHECK_GROUP, OP_TOPIC, queue_id, new_op_offset)

    def _stale_copies(self, queue_id: int, half_offset: int) -> dict[tuple[str, int], int]:
        """(UNIQ_KEY, born timestamp) -> queue offset of the newest copy written for a check, for the copies
        at or after *half_offset* (older ones were passed and are forgotten).  A half message found before the
        newest copy of its transaction is passed over without a copy or a check: the newest copy is checked
        when the scan gets to it.  Such stale copies are left behind by a kill -9 before the check offset was
        saved (the next broker scans the copied halves again and copies them again, while the earlier copies
        are still in the queue): 4.9.3 copies and checks each of them, and a producer answering COMMIT to
        every check has its message committed once per copy.  Here a transaction is checked once per round.
        A copy keeps its half message's born time, so another send that reused the UNIQ_KEY is not one."""
        latest = self._latest_copy.setdefault(queue_id, {})
        for key in [k for k, offset in latest.items() if offset < half_offset]:
            del latest[key]
        return latest

    def _ended_late_keys(self, queue_id: int, half_offset: int, end: int, passed: set[int]
                         ) -> dict[tuple[str, int], int]:
        """(UNIQ_KEY, born timestamp) -> queue end, for the transactions ended by op records naming half
        messages this broker copied for a check, before *half_offset* (*passed*, read this round), or by such
        records read in earlier rounds.  Every copy of such a transaction lies before the end noted with it
        (copies are written by the scan, which writes none of an ended one), so a copy found there is passed
        over; an entry goes once the scan starts at its end.  No store read: the keys are the ones noted when
        the copies were made (an op record naming a half that was never copied, the usual commit, costs a
        dict look-up).  Kept in memory only: after a restart such a copy is checked again, as in 4.9.3."""
        ended = self._ended_late.setdefault(queue_id, {})
        for key in [k for k, until in ended.items() if until <= half_offset]:
            del ended[key]
        copied = self._copied.get(queue_id)
        if copied:
            for offset in passed:
                if offset in copied:
                    ended[copied.pop(offset)] = end
        return ended

    def _forget_finished_copies(self, queue_id: int, latest: dict[tuple[str, int], int]) -> None:
        """Forget the copies of transactions with no copy ahead of the scan any more (no entry in *latest*,
        as :meth:`_stale_copies` left it): a late END naming one of them has nothing left to pass over.
        Kept, the copies of every transaction given up after transactionCheckMax checks, or committed from
        a later copy than the first, stayed until _COPIED_KEPT pushed them out (producer churn: 100,000
        per half queue); now what is kept is bounded by the transactions still open."""
        copied = self._copied.get(queue_id)
        if copied:
            for offset in [o for o, key in copied.items() if key not in latest]:
                del copied[offset]

    async def _put_back(self, half: StoredMessage, props: dict[str, str]) -> PutResult | None:
        """Write *half* again at the end of its queue with *props* (its check count raised).  As 4.9.3's
        renewHalfMessageInner, the copy has flag 0 and reconsume count 0."""
        copy = Message(HALF_TOPIC, half.body, props, half.queue_id, 0, half.sys_flag, half.born_timestamp,
                       half.born_host, half.store_host, 0)
        result = await self.broker.put(copy, wait=False)
        if result.status is not PutMessageStatus.PUT_OK:
            log.error("cannot put half message %s back for its check: %s", half.msg_id, result.status.name)
            return None
        return result

    async def _pass_immune(self, half: StoredMessage, props: dict[str, str], removed: dict[int, int],
                           done: list[int], done_halves: set[int]) -> bool:
        """A half message still under its producer-set immunity does not hold the queue up: it is done if its
        first queue offset (TRAN_PREPARED_QUEUE_OFFSET) has an op record, else it goes to the end of the
        queue to wait.  False: it could not be passed (the round stops there).  (4.9.3 looks among the op
        records about halves not yet passed only, so an immune message ended after the scan passed its first
        offset is copied until its immunity runs out; the op records read this round count here too.)"""
        if self._ended_first(props, removed, done, done_halves):
            return True
        prepared_text = props.get(PropertyName.TRAN_PREPARED_QUEUE_OFFSET)
        if prepared_text is not None and _long(prepared_text) == -1:
            return False
        return await self._put_back_immune(half, props)

    @staticmethod
    def _ended_first(props: dict[str, str], removed: dict[int, int], done: list[int], done_halves: set[int]
                     ) -> bool:
        """Whether the op records read this round end the half message first stored at the queue offset
        *props* remember (TRAN_PREPARED_QUEUE_OFFSET, on the copies of an immune one); its op record, if
        still waiting in *removed*, is then done."""
        prepared_text = props.get(PropertyName.TRAN_PREPARED_QUEUE_OFFSET)
        if prepared_text is None:
            return False
        prepared = _long(prepared_text)
        if prepared in removed:
            done.append(removed.pop(prepared))
            return True
        return prepared in done_halves

    async def _put_back_immune(self, half: StoredMessage, props: dict[str, str]) -> bool:
        """renewImmunityHalfMessageInner: *half* written again at the end of its queue, remembering the
        queue offset it was first stored at (TRAN_PREPARED_QUEUE_OFFSET), which op records name.  Its
        properties are serialised again after renewHalfMessageInner's setWaitStoreMsgOK(false): the copy,
        and the message a commit makes of it, say WAIT=false."""
        props = dict(props)
        props[PropertyName.WAIT] = "false"
        props.setdefault(PropertyName.TRAN_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
        return await self._put_back(half, props) is not None

    def _send_check(self, half: StoredMessage, props: dict[str, str], copy: PutResult) -> None:
        """CHECK_TRANSACTION_STATE about *copy* to one connected producer of the half message's group."""
        group = props.get(PropertyName.PGROUP, "")
        channels = [c for c in self.broker.clients.producer_channels(group)
                    if isinstance(c.connection, Connection) and not c.connection.is_closed]
        if not channels:
            log.warning("no producer of group %r is connected to check half message %s", group, half.msg_id)
            return
        connection = channels[next(self._round_robin) % len(channels)].connection
        assert isinstance(connection, Connection)
        # 4.9.3's renewHalfMessageInner shares the half message's properties map with the copy it writes, and
        # its setWaitStoreMsgOK(false) after serialising the copy's properties reaches the map the check then
        # encodes: the copy keeps the WAIT it had, the check's message says WAIT=false
        props = dict(props)
        props[PropertyName.WAIT] = "false"
        uniq = props.get(PropertyName.UNIQ_KEY)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=copy.queue_offset, commit_log_offset=copy.commit_log_offset, msg_id=uniq,
            transaction_id=uniq, offset_msg_id=copy.msg_id)
        # the body: the half message as a record, under its real topic and queue, at the copy's offsets
        topic = props.get(PropertyName.REAL_TOPIC, half.topic)
        real_qid = _long(props.get(PropertyName.REAL_QID, ""))
        queue_id = real_qid if real_qid >= 0 else half.queue_id
        message = Message(topic, half.body, props, queue_id, half.flag, half.sys_flag, half.born_timestamp,
                          half.born_host, half.store_host, half.reconsume_times, half.prepared_transaction_offset)
        body, _ = encode_record(message, store_host=half.store_host, born_host=half.born_host,
                                store_timestamp=half.store_timestamp, queue_offset=copy.queue_offset,
                                commit_log_offset=copy.commit_log_offset)
        command = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), bytes(body),
                                          oneway=True)
        self.checks_sent += 1
        asyncio.get_running_loop().create_task(self.broker.send_quietly(connection, command))

    async def _discard(self, half: StoredMessage, props: dict[str, str]) -> None:
        """Give up on *half*: keep it in TRANS_CHECK_MAX_TIME_TOPIC for people to look at."""
        broker = self.broker
        if broker.topics.get(CHECK_MAX_TIME_TOPIC) is None:
            broker.topics.create_retry_or_dlq(CHECK_MAX_TIME_TOPIC, 1, Perm.READ | Perm.WRITE)
            broker.topic_created()
        log.error("half message %s (real topic %s) was checked too many times: moved to %s", half.msg_id,
                  props.get(PropertyName.REAL_TOPIC), CHECK_MAX_TIME_TOPIC)
        message = Message(CHECK_MAX_TIME_TOPIC, half.body, props, 0, half.flag, half.sys_flag, half.born_timestamp,
                          half.born_host, half.store_host, half.reconsume_times)
        result = await broker.put(message, wait=False)
        if result.status is not PutMessageStatus.PUT_OK:
            log.error("cannot move half message %s to %s: %s", half.msg_id, CHECK_MAX_TIME_TOPIC, result.status.name)


def _long(text: str) -> int:
    """*text* as a number, -1 when malformed (RocketMQ's getLong / getInt answer)."""
    try:
        return int(text)
    except ValueError:
        return -1
