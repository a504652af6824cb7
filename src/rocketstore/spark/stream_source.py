"""The ``rocketmq`` data source: topics of a running broker (found through its name server) as a streaming
or batch DataFrame, and the ``rocketmq`` sink (sink.py) under the same name.

    spark.readStream.format("rocketmq").option("nameServer", "127.0.0.1:9876")
         .option("subscribe", "TopicA").option("startingOffsets", "earliest").load()

Offsets are ``{topic: {"brokerName:queueId": nextQueueOffset}}`` (stream_options), with one read message per
queue under MARKS_KEY that tells a queue continued from a new one that reused its offsets (a topic created
again).  The driver side (initialOffset / latestOffset / commit, in Spark's planner worker) asks the broker for
min / max offsets; a
partition is a list of queue ranges ``[start, end)`` that an executor pulls with the client, dropping
anything at or past ``end``, so a batch replayed from the checkpoint yields the same rows.  After Spark
commits a batch, the end offsets are committed to the broker for ``consumerGroup`` (when given), so
RocketMQ tools show the query's lag.

pyspark and pyarrow are imported at module level: only ``register`` and Spark's workers import this module.
The driver's look-ups and checks of queues and offsets (:class:`_Planner`, the marks, queues that moved
back) are :mod:`rocketstore.spark.stream_plan`'s; their names are importable from here too.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StringType, StructField, StructType

from rocketstore.client import MessageQueue, PullResult, PullStatus
from rocketstore.client.errors import ClientError, NoRouteError
from rocketstore.message.host import HostAddress
from rocketstore.message.message_id import encode_offset_message_id
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import StoredMessage
from rocketstore.spark.arrow_decode import micros_from_ms
from rocketstore.spark.broker_io import BrokerSession
from rocketstore.spark.store_options import BATCH_MAX_BYTES, BATCH_ROWS
from rocketstore.spark.store_source import _arrow_schema, store_schema
from rocketstore.spark.stream_options import (
    FROM_KEY,
    MARKS_KEY,
    Offsets,
    PullRange,
    SourceOptions,
    SparkOptionError,
    limit_offsets,
    plan_pull_ranges,
    queue_key,
)
from rocketstore.spark.stream_plan import (
    DataLossError,
    Marks,
    _is_marked,
    _marks_below,
    _merge_forward,
    _moved_back,
    _Planner,
    _queue,
    _retrying,
    _split,
)
from rocketstore.spark.versions import check_task_version, planned_version

__all__ = ["FORMAT_NAME", "BrokerBatchReader", "BrokerStreamReader", "DataLossError", "RocketMQDataSource",
           "source_schema"]

FORMAT_NAME = "rocketmq"


def source_schema() -> StructType:
    """The store source's columns with ``brokerName`` after ``topic``."""
    fields = list(store_schema().fields)
    fields.insert(1, StructField("brokerName", StringType(), False))
    return StructType(fields)


_KNOWN = {f.name: f for f in source_schema().fields}


def _checked(schema: StructType) -> StructType:
    for f in schema.fields:
        known = _KNOWN.get(f.name)
        if known is None or known.dataType.simpleString() != f.dataType.simpleString():
            raise SparkOptionError(f"column {f.name} {f.dataType.simpleString()} is not one of the rocketmq "
                                   f"source's columns ({', '.join(_KNOWN)})")
    return schema


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: streaming and batch reads from a broker, streaming and batch writes to it."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        return source_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        return BrokerBatchReader(SourceOptions.parse(self.options, streaming=False), _checked(schema),
                                 planned_version(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BrokerStreamReader(SourceOptions.parse(self.options, streaming=True), _checked(schema),
                                  planned_version(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rocketstore.spark.sink import BrokerBatchWriter, SinkOptions, check_sink_schema

        if overwrite:  # a topic cannot be emptied: "overwrite" would quietly append (Kafka's sink refuses it too)
            raise SparkOptionError("the rocketmq sink only appends messages to topics; write with "
                                   "mode('append'), not mode('overwrite')")
        return BrokerBatchWriter(SinkOptions.parse(self.options), check_sink_schema(schema, self.options),
                                 planned_version(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rocketstore.spark.sink import BrokerStreamWriter, SinkOptions, check_sink_schema

        return BrokerStreamWriter(SinkOptions.parse(self.options), check_sink_schema(schema, self.options),
                                  planned_version(self.options))


class BrokerPartition(InputPartition):
    def __init__(self, options: SourceOptions, ranges: list[PullRange]) -> None:
        super().__init__([tuple(r) for r in ranges])
        self.options = options
        self.ranges = ranges


class BrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, schema: StructType, version: str | None = None) -> None:
        self.options = options
        self.schema = schema
        #: the rocketstore version planning ran; each task checks it runs the same (spark/versions.py)
        self.planned_version = version or planned_version()
        self.planner = _Planner(options)
        self._target: Offsets | None = None
        #: topic -> the queue keys of the last look-up that found it routed (absent: not routed / not yet seen);
        #: None before the first look-up.  Each change is told once on stderr (_tell_topic_changes)
        self._routed: dict[str, set[str]] | None = None

    def initialOffset(self) -> dict:
        start: dict = self.planner.retrying(
            "resolving the starting offsets",
            lambda: self.planner.resolve(self.options.starting_offsets, default=-2, past_max=True))
        self._tell_topic_changes(start)
        # an endOffset of another query given as startingOffsets: its marks of the queues started below them
        # are checked at the first trigger, as a checkpoint's are (a topic created again since is data loss)
        marks = _marks_below(self.options.starting_marks, start)
        if marks:
            start[MARKS_KEY] = marks
        return start

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.planner.retrying("looking up the latest offsets", self.planner.latest)
        self._tell_topic_changes(self._target)

    def _named_topics(self) -> tuple[str, ...]:
        opts = self.options
        return opts.subscribe if opts.subscribe is not None else tuple(opts.assign or ())

    def _naming_option(self) -> str:
        """The option that named :meth:`_named_topics`."""
        return "subscribe" if self.options.subscribe is not None else "assign"

    def _tell_topic_changes(self, found: Offsets) -> None:
        """One line on stderr per change of what the name servers route for the query, *found* being the
        queues a look-up found: a topic named by subscribe / assign that they do not know (at the first look-up:
        a misspelt name reads nothing, it is not silently an empty topic), a topic that stopped being routed
        (deleted, or its broker left) or came back, queues added to a topic."""
        routed = {t: set(q) for t, q in found.items() if q}
        if self._routed is None:
            for topic in self._named_topics():
                if topic not in routed:
                    option = self._naming_option()
                    what = ("do not know it" if topic in self.planner.unknown
                            else "route none of the queues the option names")
                    print(f"rocketmq source: WARN topic {topic!r} (option {option}): the name servers "
                          f"{self.options.name_server} {what}; the query reads nothing from it until they do "
                          "(a stream waits for it, as Kafka's subscribe waits for a topic; Trigger.AvailableNow "
                          "fails for a topic it never read)", file=sys.stderr)
            for topic, wanted in sorted((self.options.assign or {}).items()):
                have = {k for mq in self.planner.known_queues(topic) for k in (queue_key(mq), str(mq.queue_id))}
                missing = [q for q in wanted if q not in have]
                if have and missing:
                    print(f"rocketmq source: WARN option assign names queue(s) {', '.join(missing)} of topic "
                          f"{topic!r}, which it does not have ({', '.join(sorted(k for k in have if ':' in k))}); "
                          "nothing is read from them until they exist", file=sys.stderr)
            if self.options.subscribe_pattern is not None and not routed:
                print(f"rocketmq source: WARN option subscribePattern {self.options.subscribe_pattern!r} matches no "
                      f"topic the name servers {self.options.name_server} route; the query reads topics that match "
                      "as they are created", file=sys.stderr)
        else:
            for topic in sorted(set(self._routed) - set(routed)):
                print(f"rocketmq source: WARN topic {topic!r} is no longer routed by the name servers (deleted, or "
                      "its broker left): nothing more is read from it; its offsets stay in the checkpoint, and if "
                      "it comes back a queue created again is checked against them (failOnDataLoss)", file=sys.stderr)
            for topic, keys in sorted(routed.items()):
                before = self._routed.get(topic)
                if before is None:
                    print(f"rocketmq source: topic {topic!r} is routed by the name servers now "
                          f"({len(keys)} queue(s)): reading it", file=sys.stderr)
                elif keys - before:
                    print(f"rocketmq source: topic {topic!r} has new queues {', '.join(sorted(keys - before))}: "
                          "read from their min offsets", file=sys.stderr)
        self._routed = routed

    def _check_available_now(self, start: Offsets) -> None:
        """SparkOptionError when a Trigger.AvailableNow query names a topic the name servers do not know and its
        offsets have none of: "what the topic holds now" means nothing for it (a misspelt name would archive
        nothing and succeed).  A topic the query read before (deleted since) was warned about and just ends."""
        missing = [t for t in dict.fromkeys(self._named_topics())
                   if t in self.planner.unknown and not start.get(t)]
        if missing:
            option = self._naming_option()
            raise SparkOptionError(f"option {option} names {', '.join(map(repr, missing))}, which the name servers "
                                   f"{self.options.name_server} do not know (no route): a query with "
                                   "Trigger.AvailableNow reads what a topic holds when it starts, and there is no "
                                   "such topic (without AvailableNow a stream waits for it to be created)")

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        start, marks, _ = _split(start)
        if self._target is not None:
            latest = self._target
            self._check_available_now(start)
        else:
            latest = self.planner.retrying("looking up the latest offsets", self.planner.latest)
            self._tell_topic_changes(latest)
        moved, back = _moved_back(start, latest, self.options.fail_on_data_loss, self.planner.min_offset_of)
        # a queue that moved back was reported as lost and is read from its min offset: its mark is of the old
        # queue
        marks = {t: {k: m for k, m in q.items() if moved.get(t, {}).get(k) == start.get(t, {}).get(k)}
                 for t, q in marks.items()}
        start, marks, restarted = self.planner.checked_marks(moved, marks, latest)
        for topic, queues in back.items():
            restarted.setdefault(topic, {}).update(queues)
        end = _merge_forward(start, latest)
        if isinstance(limit, ReadMaxRows):
            end = _merge_forward(start, limit_offsets(self._from_minimums(start, end), end, limit.max_rows))
        doc: dict = dict(end)
        marks = self._end_marks(start, end, marks)
        if marks:
            doc[MARKS_KEY] = marks
        if restarted:
            doc[FROM_KEY] = restarted
        return doc

    def _end_marks(self, start: Offsets, end: Offsets, kept: Marks) -> Marks:
        """*kept* and, for each queue the batch ``start -> end`` reads that has no mark, its message at
        ``end - 1`` (one pull, once per queue: the mark then stays until retention deletes it)."""
        out: Marks = {t: dict(q) for t, q in kept.items()}
        for topic, queues in sorted(end.items()):
            for key, until in sorted(queues.items()):
                if key in out.get(topic, {}) or until <= start.get(topic, {}).get(key, 0):
                    continue
                found = self.planner.message_at(topic, key, until - 1)
                if found is not None:
                    m = found[0]
                    out.setdefault(topic, {})[key] = [until - 1, m.commit_log_offset, m.store_timestamp]
        return out

    def _from_minimums(self, start: Offsets, end: Offsets) -> Offsets:
        """*start* with every queue that only *end* has (it appeared since: a new topic or queue, a broker
        back) at its broker min offset.  Its range is planned from 0 and read from the minimum; limited from
        0, its share could end below the minimum and the next trigger would start there, in messages that
        were gone before the query ever saw the queue (a data-loss error)."""
        fresh = [(topic, key) for topic, queues in end.items() for key in queues if key not in start.get(topic, {})]
        if not fresh:
            return start

        def look_up() -> Offsets:
            out: Offsets = {t: dict(q) for t, q in start.items()}
            for topic, key in fresh:
                low = self.planner.session.min_offset(_queue(topic, key))
                out.setdefault(topic, {})[key] = min(max(low, 0), end[topic][key])
            return out

        return self.planner.retrying("looking up the min offsets of new queues", look_up)

    def reportLatestOffset(self) -> dict | None:
        return None  # one more round of look-ups per trigger is not worth a progress field

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        start, _, _ = _split(start)
        end, _, restarted = _split(end)
        for topic, queues in restarted.items():  # new queues read from their min offsets (_Planner.checked_marks)
            start.setdefault(topic, {}).update(queues)
        return [BrokerPartition(self.options, group)
                for group in plan_pull_ranges(start, end, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        check_task_version(getattr(self, "planned_version", None), "this rocketmq stream read")
        assert isinstance(partition, BrokerPartition)
        return read_ranges(partition.options, partition.ranges, self.schema)

    def commit(self, end: dict) -> None:
        if self.options.consumer_group is None:
            return
        end, _, _ = _split(end)
        for topic, queues in sorted(end.items()):
            committed = {_queue(topic, key): offset for key, offset in queues.items()}
            self.planner.retrying(f"committing offsets of {topic} for group {self.options.consumer_group!r}",
                                  functools.partial(self._commit_routed, committed))

    def _commit_routed(self, committed: dict[MessageQueue, int]) -> None:
        """Commit *committed* (one topic), leaving out queues the name servers no longer route (the topic was
        deleted, or its broker left): the checkpoint still holds their offsets, and the informational commit
        must not fail every trigger (and every restart) for them."""
        session = self.planner.session
        try:
            session.commit_offsets(committed)
            return
        except NoRouteError:
            routed = session.queues_if_known(next(iter(committed)).topic)  # raises while they are unreachable
            gone = [mq for mq in committed if routed is None or mq not in routed]
            if not gone:
                raise
        named = ", ".join(f"{mq.topic} {queue_key(mq)}" for mq in gone)
        print(f"rocketmq source: not committing the offsets of {named} for group "
              f"{self.options.consumer_group!r}: the name servers route no such queue (the topic was deleted, or "
              "its broker left)", file=sys.stderr)
        rest = {mq: offset for mq, offset in committed.items() if mq not in gone}
        if rest:
            session.commit_offsets(rest)

    def stop(self) -> None:
        self.planner.close()


class BrokerBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions, schema: StructType, version: str | None = None) -> None:
        self.options = options
        self.schema = schema
        #: the rocketstore version planning ran; each task checks it runs the same (spark/versions.py)
        self.planned_version = version or planned_version()

    def partitions(self) -> Sequence[InputPartition]:
        planner = _Planner(self.options)
        try:
            start = planner.retrying("resolving the starting offsets",
                                     lambda: planner.resolve(self.options.starting_offsets, default=-2,
                                                             past_max=True))
            end = planner.retrying("resolving the ending offsets",
                                   lambda: planner.resolve(self.options.ending_offsets, default=-1))
            self._check_topics_known(planner)
            end = self._checked_end(planner, end)
            start = self._checked_start(planner, start, end)
        finally:
            planner.close()
        ranges = plan_pull_ranges(start, end, self.options.min_partitions)
        return [BrokerPartition(self.options, group) for group in ranges] or [InputPartition(None)]

    def _check_topics_known(self, planner: _Planner) -> None:
        """SparkOptionError when ``subscribe`` or ``assign`` names a topic the name servers do not know: as Spark's
        Kafka source fails a batch read of a topic the cluster does not have, instead of reading a misspelt name
        as an empty topic.  (A stream waits for such a topic to be created; ``subscribePattern`` matching no
        topic reads nothing.)"""
        opts = self.options
        named = opts.subscribe if opts.subscribe is not None else tuple(opts.assign or ())
        unknown = [t for t in dict.fromkeys(named) if t in planner.unknown]
        if unknown:
            option = "subscribe" if opts.subscribe is not None else "assign"
            raise SparkOptionError(f"option {option} names {', '.join(map(repr, unknown))}, which the name servers "
                                   f"{opts.name_server} do not know (no route): a batch read needs an existing topic")

    def _checked_end(self, planner: _Planner, end: Offsets) -> Offsets:
        """*end* checked for the queues a JSON endingOffsets marks (a stream's endOffset copied to read up to
        where the stream got): a queue whose marked message is now another one, or that now ends below the
        given offset, is a new one (its topic deleted and created again) that the offsets do not describe.
        Data loss, or with failOnDataLoss=false (as a stream reads such a queue from its min offset) the new
        queue is read up to its max offset."""
        spec = self.options.ending_offsets
        if not isinstance(spec, dict) or not self.options.ending_marks:
            return end
        changed: list[tuple[str, str, str]] = []  # topic, key, what changed
        for topic, queues in sorted(self.options.ending_marks.items()):
            for key, mark in sorted(queues.items()):
                given, until = spec.get(topic, {}).get(key), end.get(topic, {}).get(key)
                if given is None or until is None or given < 0 or mark[0] >= given:
                    continue  # not read, an unmarked offset (-1 / -2), or a mark past the offset
                if given > until:  # lowered to the queue's max offset
                    changed.append((topic, key, f"endingOffsets {given} is past the queue's end {until}"))
                    continue
                found = planner.message_at(topic, key, mark[0])
                if found is not None and not _is_marked(found[0], mark):
                    m = found[0]
                    changed.append((topic, key, f"the message read at queue offset {mark[0]} (commitlog offset "
                                                f"{mark[1]}, stored at {mark[2]} ms) is now another one (commitlog "
                                                f"offset {m.commit_log_offset}, stored at {m.store_timestamp} ms)"))
        if not changed:
            return end
        message = (f"endingOffsets name queues that are new ones (the topic was deleted and created again, or the "
                   f"broker lost messages): {'; '.join(f'{t} {k}: {what}' for t, k, what in changed)}")
        if self.options.fail_on_data_loss:
            raise DataLossError(message + "; set failOnDataLoss=false to read the new queues to their max offsets")
        print(f"rocketmq source: {message}; reading the new queues to their max offsets", file=sys.stderr)
        out: Offsets = {t: dict(q) for t, q in end.items()}
        for topic, key, _ in changed:
            out[topic][key] = planner.retrying(f"looking up the max offset of {topic} {key}",
                                               functools.partial(planner.session.max_offset, _queue(topic, key)))
        return out

    def _checked_start(self, planner: _Planner, start: Offsets, end: Offsets) -> Offsets:
        """*start* checked as a stream checks its checkpoint's offsets at a trigger, for the queues a
        startingOffsets JSON marks (MARKS_KEY: a stream's endOffset copied from its progress must not read
        another queue's messages): past the queue's max offset (_moved_back), or the marked message now
        another one (_Planner.checked_marks), is data loss, or with failOnDataLoss=false the queue is read
        from its min offset.  Any other start after the queue's end (a start past its max offset included) is
        an error naming both options, as Spark's Kafka source fails such a batch."""
        checked = start
        marked = _marks_below(self.options.starting_marks, start)
        if marked:  # the look-ups only for marked queues: a JSON typed by hand has none
            latest = planner.retrying("looking up the latest offsets", planner.latest)
            latest = {t: {k: o for k, o in q.items() if k in marked.get(t, {})} for t, q in latest.items()}
            moved, _ = _moved_back(start, latest, self.options.fail_on_data_loss, planner.min_offset_of)
            marks = _marks_below(marked, moved)
            marks = {t: {k: m for k, m in q.items() if moved[t][k] == start[t][k]} for t, q in marks.items()}
            checked, _, _ = planner.checked_marks(moved, marks, end)
        after = [f"{topic} {key}: {offset} > {end[topic][key]}" for topic, queues in sorted(checked.items())
                 for key, offset in sorted(queues.items()) if offset > end.get(topic, {}).get(key, offset)]
        if after:
            raise SparkOptionError(f"startingOffsets after endingOffsets (or past the queue's max offset) for "
                                   f"{'; '.join(after)}")
        return checked

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        check_task_version(getattr(self, "planned_version", None), "this rocketmq batch read")
        if not isinstance(partition, BrokerPartition):
            return iter(())
        return read_ranges(partition.options, partition.ranges, self.schema)


# --- executor side: pulling a range -------------------------------------------------------------------


#: the remark of a pull answered NO_MATCHED_MSG because the records were deleted, not filtered out
_REMOVED = "MESSAGE_WAS_REMOVING"


def _lost(options: SourceOptions, r: PullRange, offset: int, lost_to: int, why: str, got: PullResult) -> None:
    """DataLossError for queue offsets ``[offset, lost_to)`` of *r*, or with failOnDataLoss=false a warning."""
    message = (f"{r.topic} {r.broker_name}:{r.queue_id}: queue offsets [{offset}, {min(lost_to, r.end)}) are gone "
               f"from the broker ({why}, queue now [{got.min_offset}, {got.max_offset}))")
    if options.fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to skip them")
    print(f"rocketmq source: skipping lost messages: {message}", file=sys.stderr)


def _pull_range(session: BrokerSession, options: SourceOptions, r: PullRange) -> Iterator[list[StoredMessage]]:
    mq = r.queue
    offset = r.start
    # without a filter a pull hands over every entry from its offset on, so a first message past the offset means
    # retention deleted the records of the entries before it (the queue's min offset not corrected yet: 4.9.3
    # does that in a later step of its clean-up, and its pull steps over entries of deleted segments)
    whole = not r.fresh and options.sql is None and options.tags.strip() in ("", "*")
    while offset < r.end:
        count = min(options.pull_batch, r.end - offset)
        got = _retrying(options, f"pulling {mq.topic} {r.broker_name}:{r.queue_id} at {offset}",
                        functools.partial(session.pull, mq, offset, count, options.selector), lambda: session)
        if got.status == PullStatus.FOUND:
            if whole and got.messages and got.messages[0].queue_offset > offset:
                _lost(options, r, offset, got.messages[0].queue_offset,
                      f"the pull at {offset} answered from queue offset {got.messages[0].queue_offset} on: "
                      "their commitlog records were deleted", got)
            yield [m for m in got.messages if offset <= m.queue_offset < r.end]
        elif got.status == PullStatus.OFFSET_ILLEGAL and offset < got.min_offset and r.fresh:
            pass  # a queue read from 0 because it is new: starting at its minimum loses nothing
        elif got.status in (PullStatus.OFFSET_ILLEGAL, PullStatus.NO_NEW_MSG) or (
                got.remark == _REMOVED and got.next_begin_offset > offset and not r.fresh):
            # MESSAGE_WAS_REMOVING (answered as NO_MATCHED_MSG): every entry the pull scanned points at a deleted
            # record, and the queue's min offset has not moved past them yet
            removed = got.status == PullStatus.NO_MATCHED_MSG
            lost_to = (got.next_begin_offset if removed
                       else got.min_offset if offset < got.min_offset else r.end)
            _lost(options, r, offset, lost_to, (got.remark or got.status) if removed else got.status, got)
            if lost_to >= r.end:
                return
            offset = lost_to
            continue
        following = got.next_begin_offset
        if got.status == PullStatus.OFFSET_ILLEGAL:
            following = got.min_offset
        if following <= offset:
            raise ClientError(f"pull of {mq} at {offset} made no progress ({got.status}, next {following})")
        offset = following


def read_ranges(options: SourceOptions, ranges: list[PullRange], schema: StructType) -> Iterator[pa.RecordBatch]:
    arrow_schema = _arrow_schema(StructType([f for f in schema.fields]))
    builder = _Columns([f.name for f in schema.fields], arrow_schema)
    with BrokerSession(options.name_server, options.pull_group, timeout_s=options.timeout_s,
                       credentials=options.credentials, tls=options.tls) as session:
        for r in ranges:
            for messages in _pull_range(session, options, r):
                for m in messages:
                    builder.add(r.broker_name, m)
                    if builder.rows >= BATCH_ROWS or builder.bytes >= BATCH_MAX_BYTES:
                        yield builder.flush()  # bodies go up to 4 MiB (more inflated): cut by bytes too
    if builder.rows:
        yield builder.flush()


class _Columns:
    """Column lists of one Arrow batch of pulled messages."""

    def __init__(self, names: list[str], schema: pa.Schema) -> None:
        self.names = names
        self.schema = schema
        self._hosts: dict[HostAddress, str] = {}
        self.rows = 0
        #: body and properties bytes of the rows so far: a batch is cut at BATCH_MAX_BYTES, as the store source's
        self.bytes = 0
        self.cols: dict[str, list[object]] = {n: [] for n in names}
        self.prop_offsets: list[int] = [0]
        self.prop_keys: list[str] = []
        self.prop_values: list[str] = []

    def _host(self, host: HostAddress) -> str:
        text = self._hosts.get(host)
        if text is None:
            text = self._hosts[host] = str(host)
        return text

    def add(self, broker_name: str, m: StoredMessage) -> None:
        """One pulled message as a row."""
        cols = self.cols
        props = parse_properties(m.properties_string)
        values = {
            "topic": m.topic, "brokerName": broker_name, "queueId": m.queue_id, "queueOffset": m.queue_offset,
            "commitLogOffset": m.commit_log_offset, "body": m.body, "tags": props.get(PropertyName.TAGS),
            "keys": props.get(PropertyName.KEYS), "uniqKey": props.get(PropertyName.UNIQ_KEY),
            "bornTimestamp": m.born_timestamp, "storeTimestamp": m.store_timestamp,  # ms: micros at flush
            "sysFlag": m.sys_flag, "flag": m.flag, "reconsumeTimes": m.reconsume_times,
        }
        for name, col in cols.items():
            if name in values:
                col.append(values[name])
            elif name == "msgId":
                col.append(encode_offset_message_id(m.store_host, m.commit_log_offset))
            elif name == "bornHost":
                col.append(self._host(m.born_host))
            elif name == "storeHost":
                col.append(self._host(m.store_host))
        if "properties" in cols:
            self.prop_keys.extend(props)
            self.prop_values.extend(props.values())
            self.prop_offsets.append(len(self.prop_keys))
        self.rows += 1
        self.bytes += len(m.body) + len(m.properties_string)

    def flush(self) -> pa.RecordBatch:
        arrays = []
        for field in self.schema:
            if field.name == "properties":
                arr = pa.MapArray.from_arrays(pa.array(self.prop_offsets, pa.int32()),
                                              pa.array(self.prop_keys, pa.string()),
                                              pa.array(self.prop_values, pa.string()))
                arrays.append(arr if arr.type.equals(field.type) else arr.cast(field.type))
            elif pa.types.is_timestamp(field.type):
                ms = np.asarray(self.cols[field.name], dtype=np.int64)
                arrays.append(pa.array(micros_from_ms(ms), field.type))
            else:
                arrays.append(pa.array(self.cols[field.name], field.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self.rows = self.bytes = 0
        self.cols = {n: [] for n in self.names}
        self.prop_offsets, self.prop_keys, self.prop_values = [0], [], []
        return batch

