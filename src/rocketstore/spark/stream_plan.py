"""The driver side of the ``rocketmq`` source (:mod:`rocketstore.spark.stream_source`): which queues a query
reads and from and to which offsets.  :class:`_Planner` looks the queues up from the name servers and their
min / max / committed / searched offsets from the brokers, and checks that a queue marked read (MARKS_KEY, see
stream_options) is still the queue read; the functions below work on the offsets documents (``{topic:
{"brokerName:queueId": offset}}``): split a checkpoint's into offsets, marks and ``@from`` offsets, move a
queue whose offsets went back (a topic created again) to its min offset, merge latest offsets forward.
:func:`_retrying` is the fetchOffset.* retries and the reconnectTimeoutMs wait for a name server or broker
that cannot be reached (then :class:`SourceUnreachableError`), which the executors' pulls use too.

No pyspark or pyarrow here: this module imports with the core dependencies.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from rocketstore.client import MessageQueue, PullStatus
from rocketstore.client.errors import ClientError, NoRouteError, ServiceNotAvailableError
from rocketstore.errors import ConnectionClosedError, RemotingError, RequestTimeoutError
from rocketstore.message.record import StoredMessage
from rocketstore.spark.broker_io import BrokerSession
from rocketstore.spark.stream_options import (
    FROM_KEY,
    MARKS_KEY,
    Offsets,
    SourceOptions,
    SparkOptionError,
    queue_key,
)

__all__ = ["DataLossError", "Marks", "SourceUnreachableError"]

T = TypeVar("T")


class DataLossError(ClientError):
    """Messages of a planned range are gone (retention, or a broker that lost data) and failOnDataLoss is on."""


class _Planner:
    """Offset look-ups for the driver; owns one BrokerSession (closed by close())."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._session: BrokerSession | None = None
        #: topic -> the queues the name servers last gave (a streaming query rides out a name server outage)
        self._known: dict[str, list[MessageQueue]] = {}
        #: topics the name servers answered, at the last look-up of each, that they do not know
        self.unknown: set[str] = set()
        #: whether a look-up of this planner succeeded: only then is a name server or broker that cannot be
        #: reached waited for (reconnectTimeoutMs, a restart); before, a wrong address fails after the tries
        self._reached = False

    @property
    def session(self) -> BrokerSession:
        if self._session is None:
            self._session = BrokerSession(self.options.name_server, self.options.pull_group,
                                          timeout_s=self.options.timeout_s, credentials=self.options.credentials,
                                          tls=self.options.tls)
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def retrying(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` with the fetchOffset.* tries (:func:`_retrying`): a broker restarting between two triggers
        does not fail the query."""
        got = _retrying(self.options, what, fn, lambda: self._session, reconnect=self._reached)
        self._reached = True
        return got

    def queues(self) -> list[MessageQueue]:
        opts = self.options
        if opts.subscribe is not None:
            topics: Sequence[str] = opts.subscribe
        elif opts.assign is not None:
            topics = sorted(opts.assign)
        else:
            try:
                topics = [t for t in self.session.topics() if opts.wants_topic(t)]
            except ClientError:
                if not self._known:
                    raise
                topics = sorted(self._known)  # the name servers are unreachable: the topics they last listed
        queues: list[MessageQueue] = []
        for topic in topics:
            # None: a topic that does not exist (yet, or any more) has no queues until it does.  A name server
            # that cannot be reached is an error, not an empty topic, unless an earlier look-up of this
            # planner (an earlier trigger of the stream) found the topic's queues: those are used again
            try:
                routed = self.session.queues_if_known(topic)
            except ClientError:
                if topic not in self._known:
                    raise
                found = self._known[topic]
            else:
                found = routed or []
                if routed is None:
                    self.unknown.add(topic)
                else:
                    self.unknown.discard(topic)
            self._known[topic] = found
            queues.extend(mq for mq in found if opts.wants_queue(mq))
        return sorted(queues)

    def known_queues(self, topic: str) -> list[MessageQueue]:
        """The queues of *topic* the last look-up found (empty: none, or not looked up)."""
        return list(self._known.get(topic, ()))

    def latest(self) -> Offsets:
        out: Offsets = {}
        for mq in self.queues():
            out.setdefault(mq.topic, {})[queue_key(mq)] = self.session.max_offset(mq)
        return out

    def min_offset_of(self, topic: str, key: str) -> int:
        mq = _queue(topic, key)
        return self.retrying(f"looking up the min offset of {topic} {key}",
                             lambda: self.session.min_offset(mq))

    def message_at(self, topic: str, key: str, offset: int) -> tuple[StoredMessage, int] | None:
        """The message at queue *offset* and the queue's min offset; None when the queue has no message there
        (retention deleted it).  One pull of one message, of any tag."""
        mq = _queue(topic, key)
        got = self.retrying(f"reading {topic} {key} at {offset}",
                            lambda: self.session.pull(mq, offset, 1, "*"))
        if got.status == PullStatus.FOUND and got.messages and got.messages[0].queue_offset == offset:
            return got.messages[0], got.min_offset
        return None

    def checked_marks(self, start: Offsets, marks: Marks, latest: Offsets) -> tuple[Offsets, Marks, Offsets]:
        """Each queue that has a mark (MARKS_KEY) and messages to read now checked to be the queue read: its
        message at the marked offset must still be the marked one, else the topic was deleted and created
        again (or the broker lost messages) and the new queue's messages below *start* would be skipped.

        Returns *start* (a new queue's offset moved to its min offset when failOnDataLoss=false), the marks
        that still stand (one the broker no longer has, or past a queue that moved back, is dropped) and the
        queues moved to their min offset.  Queues with nothing to read are checked when they have: one pull
        of one message per queue the batch reads."""
        kept: Marks = {}
        changed: list[tuple[str, str, list[int], StoredMessage, int, int]] = []
        for topic, queues in sorted(marks.items()):
            for key, mark in sorted(queues.items()):
                offset = start.get(topic, {}).get(key)
                if (offset is None or not isinstance(mark, list) or len(mark) != 3
                        or not all(isinstance(v, int) for v in mark) or mark[0] >= offset):
                    continue  # a queue no longer read, or moved back below its mark (reported there)
                if latest.get(topic, {}).get(key, offset) <= offset:
                    kept.setdefault(topic, {})[key] = mark
                    continue
                found = self.message_at(topic, key, mark[0])
                if found is None:
                    continue  # retention deleted it: a new mark is taken below
                message, low = found
                if _is_marked(message, mark):
                    kept.setdefault(topic, {})[key] = mark
                else:
                    changed.append((topic, key, mark, message, low, offset))
        if not changed:
            return start, kept, {}
        described = "; ".join(
            f"{topic} {key}: the message read at queue offset {mark[0]} (commitlog offset {mark[1]}, stored at "
            f"{mark[2]} ms) is now another one (commitlog offset {m.commit_log_offset}, stored at "
            f"{m.store_timestamp} ms), offsets [{low}, {offset}) of the new queue were never read"
            for topic, key, mark, m, low, offset in changed)
        problem = (f"queues are new ones that reused the checkpoint's offsets (the topic was deleted and created "
                   f"again, or the broker lost messages), messages would be missed: {described}")
        if self.options.fail_on_data_loss:
            raise DataLossError(problem + "; set failOnDataLoss=false to read the new queues from their min offsets")
        print(f"rocketmq source: {problem}; reading the new queues from their min offsets", file=sys.stderr)
        out: Offsets = {t: dict(q) for t, q in start.items()}
        restarted: Offsets = {}
        for topic, key, _, _, low, _ in changed:
            out[topic][key] = low
            restarted.setdefault(topic, {})[key] = low
        return out, kept, restarted

    def resolve(self, spec: object, *, default: int, past_max: bool = False) -> Offsets:
        """Concrete offsets for an ``earliest`` / ``latest`` / ``group`` / JSON / timestamp start or end.

        A JSON offset is raised to the queue's min offset, and lowered to its max offset unless *past_max*
        (a start: one past the queue's end is a queue that moved back, _moved_back, not a place to start)."""
        out: Offsets = {}
        s = self.session
        queues = self.queues()
        if isinstance(spec, dict):
            _check_named_queues(spec, queues)
        for mq in queues:
            if self.options.starting_timestamp_ms is not None and spec is self.options.starting_offsets:
                offset = self._first_stored_at(mq, self.options.starting_timestamp_ms)
            elif spec == "earliest":
                offset = s.min_offset(mq)
            elif spec == "latest":
                offset = s.max_offset(mq)
            elif spec == "group":
                offset = s.committed_offset(mq, -1)
                low = s.min_offset(mq)
                if offset < low:  # none committed, or retention deleted what the group had not read yet
                    offset = low
                elif offset > (high := s.max_offset(mq)):
                    # past the queue's end (the topic was created again): corrected as 4.9.3's getMessage
                    # corrects a consumer's pull (OFFSET_OVERFLOW_BADLY), to the start when the queue still
                    # has its first message, else to its end
                    offset = low if low == 0 else high
            else:
                assert isinstance(spec, dict)
                wanted = SourceOptions.spec_offset(spec, mq)
                wanted = default if wanted is None else wanted
                low, high = s.min_offset(mq), s.max_offset(mq)
                offset = low if wanted == -2 else high if wanted == -1 else max(wanted, low)
                if not past_max:
                    offset = min(offset, high)
            out.setdefault(mq.topic, {})[queue_key(mq)] = offset
        return out

    def _first_stored_at(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of *mq* stored at or after *timestamp_ms*; the queue's max offset
        when there is none (it reads nothing), as the rocketmq-store source and Kafka's startingTimestamp.

        The broker's SEARCH_OFFSET_BY_TIMESTAMP answers the *nearest* entry (4.9.3's getOffsetInQueueByTime),
        which may be one stored before the timestamp (the last message, for a timestamp past it). The answer
        is checked with one-message pulls (two when it is the boundary) and otherwise settled by a binary
        search over the queue, assuming store times do not decrease within a queue."""
        s = self.session
        low, high = s.min_offset(mq), s.max_offset(mq)

        def before(offset: int) -> bool:  # the message at offset was stored before the timestamp
            got = s.pull(mq, offset, 1, "*")
            if got.status != PullStatus.FOUND or not got.messages:
                return True  # gone (retention): older than anything still there
            return got.messages[0].store_timestamp < timestamp_ms

        hint = s.search_offset(mq, timestamp_ms)
        if low <= hint < high:
            if before(hint):
                low = hint + 1
                if low == high or not before(low):
                    return low
            elif hint == low or before(hint - 1):
                return hint
            else:
                high = hint - 1
        while low < high:  # the first offset in [low, high) not before the timestamp, else high
            mid = (low + high) // 2
            if before(mid):
                low = mid + 1
            else:
                high = mid
        return low


class SourceUnreachableError(ClientError):
    """No name server or broker could be reached for reconnectTimeoutMs: one that stays away fails the query
    with this, naming what was being done, for how long, and the last error."""


def _unreachable(exc: BaseException | None) -> bool:
    """Whether *exc* (or what caused it) says a name server or broker could not be reached (refused, dropped,
    no answer in time, still starting) or its topic is not routed (the broker has not registered again after a
    restart), rather than that a broker answered an error."""
    while exc is not None:
        if isinstance(exc, (NoRouteError, ServiceNotAvailableError, ConnectionClosedError, RequestTimeoutError,
                            ConnectionError, TimeoutError)):
            return True
        exc = exc.__cause__
    return False


def _retrying(options: SourceOptions, what: str, fn: Callable[[], T],
              session: Callable[[], BrokerSession | None], *, reconnect: bool = True) -> T:
    """``fn()``, tried again up to fetchOffset.numRetries times, fetchOffset.retryIntervalMs apart, when a
    name server or broker answers an error; with *reconnect*, one that cannot be reached is tried again (a
    pause from fetchOffset.retryIntervalMs doubling up to 1 s, as Kafka's consumer reconnects) for up to
    reconnectTimeoutMs, then SourceUnreachableError.  Before each new try the *session*'s routes are expired
    (a broker may be back at another address).  Option errors and data loss are raised at once."""
    retries, interval_s = options.fetch_retries, options.fetch_retry_interval_s
    reconnect_s = options.reconnect_timeout_s if reconnect else 0.0
    attempt = 0
    away_since: float | None = None  # when the name server or broker was first found unreachable
    pause_s = max(interval_s, 0.05)
    while True:
        try:
            return fn()
        except (SparkOptionError, DataLossError, SourceUnreachableError):
            raise
        except (ClientError, RemotingError, OSError, TimeoutError) as exc:
            if reconnect_s > 0 and _unreachable(exc):
                now = time.monotonic()
                if away_since is None:
                    away_since = now
                    print(f"rocketmq source: {what} failed ({type(exc).__name__}: {exc}); trying again for up to "
                          f"{reconnect_s * 1000:g} ms (reconnectTimeoutMs)", file=sys.stderr)
                left_s = away_since + reconnect_s - now
                if left_s <= 0:
                    raise SourceUnreachableError(
                        f"rocketmq source: {what}: no name server or broker could be reached (or none routed "
                        f"the topic) for {now - away_since:.1f} s (reconnectTimeoutMs={reconnect_s * 1000:g}); last error: "
                        f"{type(exc).__name__}: {exc}") from exc
                current = session()
                if current is not None:
                    current.expire_routes()
                time.sleep(min(pause_s, left_s))
                pause_s = min(pause_s * 2, max(1.0, interval_s))
                continue
            if attempt == retries:
                if retries:
                    exc.add_note(f"rocketmq source: {what} failed {retries + 1} times, "
                                 f"{interval_s * 1000:g} ms apart (fetchOffset.numRetries={retries})")
                raise
            attempt += 1
            print(f"rocketmq source: {what} failed ({type(exc).__name__}: {exc}); trying again in "
                  f"{interval_s * 1000:g} ms ({attempt} of fetchOffset.numRetries={retries})", file=sys.stderr)
            current = session()
            if current is not None:
                current.expire_routes()
            time.sleep(interval_s)


def _check_named_queues(spec: dict[str, dict[str, int]], queues: list[MessageQueue]) -> None:
    """SparkOptionError when an offsets JSON names a queue that a topic being read does not have: a typo
    ("broker_a:0") would otherwise read that queue from the default offset, silently."""
    have: dict[str, set[str]] = {}
    for mq in queues:
        have.setdefault(mq.topic, set()).update((queue_key(mq), str(mq.queue_id)))
    for topic, named in spec.items():
        if topic not in have:
            continue  # not read by this query, or no queues (yet): nothing to check against
        unknown = sorted(key for key in named if key not in have[topic])
        if unknown:
            read = ", ".join(sorted(k for k in have[topic] if ":" in k))
            raise SparkOptionError(f"offsets name {', '.join(unknown)} of topic {topic!r}: not among the queues "
                                   f"read ({read})")


# MARKS_KEY (stream_options): deleting a topic drops its consume queues, a topic created again starts them at 0
# while the commitlog goes on (4.9.3's DefaultMessageStore.cleanUnusedTopic), so a marked message is then another
# one: the queue is not the one read.  FROM_KEY: queues a batch reads from another offset than its start's
#: {topic: {"brokerName:queueId": [queueOffset, commitLogOffset, storeTimestampMs]}}
Marks = dict[str, dict[str, list[int]]]


def _split(offsets: dict) -> tuple[Offsets, Marks, Offsets]:
    """The queue offsets, marks and ``@from`` offsets of an offsets document; checkpoints written before the
    marks have only the queue offsets."""
    plain = {t: dict(q) for t, q in offsets.items() if not t.startswith("@")}
    return plain, offsets.get(MARKS_KEY) or {}, offsets.get(FROM_KEY) or {}


def _is_marked(message: StoredMessage, mark: list[int]) -> bool:
    """Whether *message* (read at the mark's queue offset) is the one *mark* recorded."""
    return [message.commit_log_offset, message.store_timestamp] == mark[1:]


def _marks_below(marks: Marks | None, start: Offsets) -> Marks:
    """The *marks* of queues *start* reads past them (a startingOffsets JSON's MARKS_KEY: the rest say nothing
    about the messages read from *start* on)."""
    return {topic: kept for topic, queues in (marks or {}).items()
            if (kept := {key: mark for key, mark in queues.items() if mark[0] < start.get(topic, {}).get(key, -1)})}


def _merge_forward(start: Offsets, latest: Offsets) -> Offsets:
    """*latest* for every queue it has, never behind *start*; queues only *start* has keep their offset."""
    out: Offsets = {t: dict(q) for t, q in start.items()}
    for topic, queues in latest.items():
        for key, offset in queues.items():
            out.setdefault(topic, {})[key] = max(offset, start.get(topic, {}).get(key, offset))
    return out


def _moved_back(start: Offsets, latest: Offsets, fail: bool,
                minimum: Callable[[str, str], int]) -> tuple[Offsets, Offsets]:
    """*start* with every queue whose broker max offset is now below it moved back to the queue's min offset
    (*minimum(topic, key)*), and those queues with that offset (for the end offsets' FROM_KEY).

    A queue's offsets go back when its topic was deleted and created again, or its broker lost messages:
    left alone, the query would wait until the new queue passed the old offset and then silently skip its
    first messages.  As Spark's Kafka source, fail (failOnDataLoss) or warn and read what the broker has
    from its earliest offset on (the reading of a new queue found through its mark does the same).
    """
    moved = [(topic, key, start[topic][key], offset) for topic, queues in sorted(latest.items())
             for key, offset in sorted(queues.items()) if offset < start.get(topic, {}).get(key, offset)]
    if not moved:
        return start, {}
    described = "; ".join(f"{topic} {key}: from {old} to {new}" for topic, key, old, new in moved)
    message = (f"queue offsets moved back on the broker (the topic was deleted and created again, or the broker "
               f"lost messages), messages may have been missed: {described}")
    if fail:
        raise DataLossError(message + "; set failOnDataLoss=false to read those queues from their min offsets")
    print(f"rocketmq source: {message}; reading those queues from their min offsets", file=sys.stderr)
    out: Offsets = {t: dict(q) for t, q in start.items()}
    restarted: Offsets = {}
    for topic, key, _, new in moved:
        low = min(max(minimum(topic, key), 0), new)
        out[topic][key] = low
        restarted.setdefault(topic, {})[key] = low
    return out, restarted


def _queue(topic: str, key: str) -> MessageQueue:
    broker, _, qid = key.rpartition(":")
    return MessageQueue(topic, broker, int(qid))
