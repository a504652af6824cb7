"""The ``rocketmq`` sink: DataFrame rows sent to a broker, batch and streaming.

    df.write.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "TopicA").save()

Columns: ``body`` (required, binary or string), ``topic`` (string; the ``topic`` option overrides it), ``tags``,
``keys`` (strings), ``properties`` (map<string,string>), ``queueId`` (int; else the producer picks a queue),
``flag`` (int: the message's flag, as Java's Message.setFlag; null or absent: 0).  Other columns are ignored.
Rows of one task going to the same topic and queue are sent as batches, except a row carrying a DELAY level
or going to a %RETRY% topic: a batch may hold neither, so it is sent alone (in order).  Sends go through the
producer's public paths and checks: a row with an empty body fails the task, naming the row, as Java's producer
refuses such a message.

Every message gets a UNIQ_KEY derived from (query id, batch id, partition, row) in streaming, and from
(write id, 0, partition, row) in batch: when Spark replays a micro-batch after a failure the replayed
messages carry the same keys as the first attempt, so a consumer can drop the duplicates (the broker is
not transactional: at-least-once delivery, exactly-once recognisable).  The key's time field (bytes 10-13)
is the batch write's start on the driver, a streaming write's month start (uniq_key_for), so 4.9.3's lookup
by message id finds the message (a streaming write's, within its month).  A row whose ``properties`` hold a
UNIQ_KEY keeps it, as Java's producer keeps one set on a message (a topic copied with its properties keeps
its message ids).

A send the broker refuses fails the task: a BrokerError naming the response code, or SendRefusedError
naming a non-SEND_OK status.  Commit messages carry counts of what the broker stored; the driver prints the
totals per batch.  Spark hands the driver's abort the commit messages of the tasks that finished only, so a
failed task's error itself ends with what that task sent before failing (those messages stay on the broker).
"""

from __future__ import annotations

import hashlib
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    BinaryType,
    ByteType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from rocketstore.client.errors import BrokerError, MessageIllegalError
from rocketstore.client.outgoing_message import new_uniq_key
from rocketstore.message.properties import PropertyName, properties_problem, waits_store_msg_ok
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.codes import ResponseCode
from rocketstore.spark.broker_io import BrokerSession, OutgoingRecord, SendRefusedError
from rocketstore.spark.stream_options import SinkOptions, SparkOptionError
from rocketstore.spark.versions import check_task_version, planned_version

__all__ = ["BrokerBatchWriter", "BrokerStreamWriter", "SinkCommitMessage", "SinkOptions", "check_sink_schema",
           "uniq_key_for"]

#: a batch request body stays well under the broker's 4 MiB maxMessageSize
_BATCH_MAX_BYTES = 1 << 20
_QUERY_ID_PROPERTY = "sql.streaming.queryId"
_BATCH_ID_PROPERTY = "streaming.sql.batchId"


def uniq_key_for(write_id: str, batch_id: int, partition_id: int, row: int, time_field: int = 0) -> str:
    """32 upper-case hex digits in the layout of RocketMQ's client message ids, fixed by the inputs: an MD5 of
    the first four, whose bytes 10-13 (the id's "ms since the month began") are *time_field*.

    4.9.3 looks a message up by such an id (viewMessage(topic, msgId), the dashboard's search by message id)
    in the index from the time that field tells (MessageClientIDSetter.getNearlyTimeFromID) on: a random one
    may name a time after the message was stored, and the message is then not found.  A batch write gives
    the driver's time when the write began (before any of its messages is stored; a task retry reuses it), a
    streaming write 0 (the month's start: a replayed batch must carry the same keys, whenever it runs)."""
    digest = hashlib.md5(f"{write_id}/{batch_id}/{partition_id}/{row}".encode()).hexdigest().upper()
    return f"{digest[:20]}{time_field & 0xFFFFFFFF:08X}{digest[28:]}"


def check_sink_schema(schema: StructType, options: Mapping[str, str]) -> StructType:
    """Refuse a DataFrame the sink cannot send (before any task runs)."""
    types = {f.name: f.dataType for f in schema.fields}

    def expect(name: str, *allowed: type) -> None:
        dt = types.get(name)
        if dt is not None and not isinstance(dt, allowed):
            raise SparkOptionError(f"column {name} is {dt.simpleString()}; the rocketmq sink needs "
                                   f"{' or '.join(a().simpleString() for a in allowed)}")

    if "body" not in types:
        raise SparkOptionError("the rocketmq sink needs a 'body' column (binary or string)")
    has_topic_option = any(str(k).lower() == "topic" and v for k, v in options.items())
    expect("body", BinaryType, StringType)
    if not has_topic_option:  # the option overrides the column, which is then not read (whatever its type)
        expect("topic", StringType)
    expect("tags", StringType)
    expect("keys", StringType)
    expect("queueId", IntegerType, LongType, ShortType)
    expect("flag", IntegerType, ShortType, ByteType)  # a Java int
    props = types.get("properties")
    if props is not None and not (isinstance(props, MapType) and isinstance(props.keyType, StringType)
                                  and isinstance(props.valueType, StringType)):
        raise SparkOptionError(f"column properties is {props.simpleString()}; the sink needs map<string,string>")
    if "topic" not in types and not has_topic_option:
        raise SparkOptionError("the rocketmq sink needs a 'topic' column or the 'topic' option")
    return schema


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    partition_id: int
    message_count: int = 0
    body_bytes: int = 0
    send_count: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)

    def add_send(self, topic: str, records: list[OutgoingRecord]) -> None:
        """Count one send of *records* the broker stored."""
        self.message_count += len(records)
        self.body_bytes += sum(len(r.body) for r in records)
        self.send_count += 1
        self.per_topic[topic] = self.per_topic.get(topic, 0) + len(records)


def _column(batch: pa.RecordBatch, name: str) -> list[object] | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index).to_pylist()


def write_partition(options: SinkOptions, write_id: str, batch_id: int,
                    batches: Iterator[pa.RecordBatch], time_field: int = 0) -> SinkCommitMessage:
    """Send every row of this task's batches; the UNIQ_KEYs are fixed by (write id, batch, partition, row)
    and *time_field* (uniq_key_for)."""
    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else 0
    #: what the broker stored so far (a failed task's error tells it: Spark's abort never sees it)
    report = SinkCommitMessage(partition_id)
    try:
        _write_rows(options, write_id, batch_id, partition_id, batches, report, time_field)
    except Exception as exc:
        unsure = "" if isinstance(exc, (BrokerError, SendRefusedError, SparkOptionError)) else \
            " (a send whose answer did not come may have stored more)"
        exc.add_note(f"rocketmq sink: partition {partition_id} sent {_describe(report)} before this failure{unsure}; "
                     "they stay on the broker")
        raise
    return report


def _write_rows(options: SinkOptions, write_id: str, batch_id: int, partition_id: int,
                batches: Iterator[pa.RecordBatch], report: SinkCommitMessage, time_field: int = 0) -> None:
    pending: dict[tuple[str, int | None], tuple[list[OutgoingRecord], list[int]]] = {}
    row = 0
    with BrokerSession(options.name_server, options.producer_group, timeout_s=options.timeout_s,
                       credentials=options.credentials, tls=options.tls) as session:

        def flush(key: tuple[str, int | None]) -> None:
            records, _ = pending.pop(key)
            if records:
                _send_split(session, key[0], records, key[1], report)

        for batch in batches:
            bodies = _column(batch, "body") or []
            topics = None if options.topic else _column(batch, "topic")  # the option overrides the column
            tags = _column(batch, "tags")
            keys = _column(batch, "keys")
            props = _column(batch, "properties")
            queue_ids = _column(batch, "queueId")
            flags = _column(batch, "flag")
            for i, body in enumerate(bodies):
                # the option overrides the column, as in Kafka's sink: a DataFrame read from a topic has a topic
                # column, which would otherwise send its rows back where they came from
                topic = options.topic or (topics[i] if topics is not None else None)
                if not topic:
                    raise SparkOptionError(f"row {row} of partition {partition_id} has no topic (column and option "
                                           "both empty)")
                if body is None:
                    raise SparkOptionError(f"row {row} of partition {partition_id} has a null body")
                data = body.encode() if isinstance(body, str) else bytes(body)  # type: ignore[call-overload]
                if not data:  # Java's producer sends no such message (Validators.checkMessage), nor does Producer
                    raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, f"row {row} of partition {partition_id} "
                                              "has an empty body: the message body length is zero")
                properties: dict[str, str] = {}
                if props is not None and props[i]:
                    properties.update((str(k), str(v)) for k, v in props[i] if v is not None)  # type: ignore[attr-defined]
                    if properties.get(PropertyName.TRAN_MSG, "").lower() == "true":  # Boolean.parseBoolean
                        raise SparkOptionError(
                            f"row {row} of partition {partition_id} sets property TRAN_MSG=true: the broker would "
                            "keep it as a transaction's half message, which no consumer sees and no producer of "
                            "the sink commits; the rocketmq sink sends no transactional messages (drop the property, "
                            "e.g. map_filter(properties, (k, v) -> k != 'TRAN_MSG'): committed transactional messages "
                            "read from a topic keep it)")
                if tags is not None and tags[i]:
                    properties[PropertyName.TAGS] = str(tags[i])
                if keys is not None and keys[i]:
                    properties[PropertyName.KEYS] = str(keys[i])
                if properties:
                    # what the producer would refuse in the batch, refused here: before any of it is sent
                    problem = properties_problem(properties)
                    if problem is not None:
                        raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL,
                                                  f"row {row} of partition {partition_id}: {problem}")
                if PropertyName.UNIQ_KEY not in properties:  # one of the row's stays (MessageClientIDSetter)
                    properties[PropertyName.UNIQ_KEY] = uniq_key_for(write_id, batch_id, partition_id, row,
                                                                     time_field)
                qid = queue_ids[i] if queue_ids is not None else None
                key = (str(topic), None if qid is None else int(qid))  # type: ignore[call-overload]
                records, size = pending.setdefault(key, ([], [0]))
                # a batch refuses delayed messages and retry topics, as RocketMQ's does (the single send of a
                # retry topic's message moves its RECONSUME_TIME / MAX_RECONSUME_TIMES into the header), and
                # its messages share one WAIT
                alone = PropertyName.DELAY in properties or key[0].startswith(RETRY_GROUP_TOPIC_PREFIX)
                if records and (alone or size[0] + len(data) > _BATCH_MAX_BYTES
                                or waits_store_msg_ok(records[0].properties) != waits_store_msg_ok(properties)):
                    flush(key)  # what came before goes first: the queue keeps the rows' order
                    records, size = pending.setdefault(key, ([], [0]))
                flag = flags[i] if flags is not None else None  # null: 0, as a message that never set one
                records.append(OutgoingRecord(data, properties, row, flag or 0))  # type: ignore[arg-type]
                row += 1
                size[0] += len(data)
                if alone or len(records) >= options.batch_messages:
                    flush(key)
        for key in list(pending):
            flush(key)


def _size_refusal(exc: BrokerError) -> bool:
    """Whether *exc* refuses a batch for its size: 4.9.3's MESSAGE_ILLEGAL for a body over maxMessageSize (the
    broker's wording names the length limits; the client's "body size over max value"), or the SYSTEM_ERROR
    of its batch encoder when the stored records come out over it ("message size exceeded")."""
    remark = exc.remark or ""
    if isinstance(exc, MessageIllegalError):
        return "length limit" in remark or "body size over max value" in remark
    return exc.code == ResponseCode.SYSTEM_ERROR and "message size exceeded" in remark


def _send_split(session: BrokerSession, topic: str, records: list[OutgoingRecord], queue_id: int | None,
                report: SinkCommitMessage) -> None:
    """Send *records*, in order, counting in *report* what the broker stored.

    The batch budget (_BATCH_MAX_BYTES) fits RocketMQ's default maxMessageSize (4 MiB), but a broker may be
    configured lower, and it refuses a whole batch above it (nothing stored): such a batch is sent again as
    two halves, down to single messages, whose refusal fails the task as before.  Any other refusal fails the
    task at once: a message the broker will not take is not made acceptable by sending the others first.
    """
    try:
        session.send(topic, records, queue_id)
    except SendRefusedError as exc:  # stored, though not SEND_OK
        report.add_send(topic, records)
        exc.add_note(_send_rows(records, report.partition_id))
        raise
    except BrokerError as exc:
        if len(records) < 2 or not _size_refusal(exc):
            exc.add_note(_send_rows(records, report.partition_id))
            raise
    except Exception as exc:  # the producer's own checks, a timeout, a broker gone: the rows are named all the same
        exc.add_note(_send_rows(records, report.partition_id))
        raise
    else:
        report.add_send(topic, records)
        return
    half = len(records) // 2
    _send_split(session, topic, records[:half], queue_id, report)
    _send_split(session, topic, records[half:], queue_id, report)


def _send_rows(records: list[OutgoingRecord], partition_id: int) -> str:
    """The rows of a failed send, so that the user finds the row the broker refused (e.g. one over its
    maxMessageSize): the error itself names a message only by its size or UNIQ_KEY."""
    rows = [r.row for r in records]
    if len(rows) == 1:
        return (f"rocketmq sink: the failed send held row {rows[0]} of partition {partition_id} "
                f"(UNIQ_KEY {records[0].uniq_key}, {len(records[0].body)} body bytes)")
    shown = ", ".join(str(n) for n in rows[:8]) + (", ..." if len(rows) > 8 else "")
    return f"rocketmq sink: the failed send held {len(rows)} rows of partition {partition_id}: {shown}"


def _totals(messages: list[WriterCommitMessage | None]) -> SinkCommitMessage:
    total = SinkCommitMessage(-1)
    for m in messages:
        if isinstance(m, SinkCommitMessage):
            total.message_count += m.message_count
            total.body_bytes += m.body_bytes
            total.send_count += m.send_count
            for topic, n in m.per_topic.items():
                total.per_topic[topic] = total.per_topic.get(topic, 0) + n
    return total


def _describe(total: SinkCommitMessage) -> str:
    topics = ", ".join(f"{t}={n}" for t, n in sorted(total.per_topic.items())) or "none"
    return f"{total.message_count} messages, {total.body_bytes} body bytes in {total.send_count} sends ({topics})"


def _aborted(messages: list[WriterCommitMessage | None]) -> str:
    """What an abort knows: Spark passes the commit messages of the tasks that finished, None for the others."""
    unfinished = sum(1 for m in messages if not isinstance(m, SinkCommitMessage))
    return (f"the {len(messages) - unfinished} tasks that finished sent {_describe(_totals(messages))}; "
            f"{unfinished} did not finish: a failed task's error says what it sent before failing")


class BrokerBatchWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``; the write id is drawn once on the driver, so task retries reuse it."""

    def __init__(self, options: SinkOptions, schema: StructType, version: str | None = None) -> None:
        self.options = options
        self.schema = schema
        self.write_id = uuid.uuid4().hex
        #: the UNIQ_KEYs' time field: the driver's time now, as Java's producer writes it (uniq_key_for)
        self.time_field = int(new_uniq_key()[-12:-4], 16)
        #: the rocketstore version planning ran; each task checks it runs the same (spark/versions.py)
        self.planned_version = version or planned_version()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:  # type: ignore[override]
        check_task_version(getattr(self, "planned_version", None), "this rocketmq sink write")
        return write_partition(self.options, self.write_id, 0, iterator, getattr(self, "time_field", 0))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        print(f"rocketmq sink: write {self.write_id}: {_describe(_totals(messages))}", file=sys.stderr)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        print(f"rocketmq sink: write {self.write_id} aborted: {_aborted(messages)} (they stay on the broker)",
              file=sys.stderr)


class BrokerStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("rocketmq")``: keys from the query id (stable across restarts) and batch id."""

    def __init__(self, options: SinkOptions, schema: StructType, version: str | None = None) -> None:
        self.options = options
        self.schema = schema
        self.fallback_id = uuid.uuid4().hex
        #: the rocketstore version planning ran; each task checks it runs the same (spark/versions.py)
        self.planned_version = version or planned_version()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:  # type: ignore[override]
        check_task_version(getattr(self, "planned_version", None), "this rocketmq sink write")
        context = TaskContext.get()
        query_id = context.getLocalProperty(_QUERY_ID_PROPERTY) if context is not None else None
        batch = context.getLocalProperty(_BATCH_ID_PROPERTY) if context is not None else None
        return write_partition(self.options, query_id or self.fallback_id, int(batch or 0), iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        print(f"rocketmq sink: batch {batchId}: {_describe(_totals(messages))}", file=sys.stderr)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        print(f"rocketmq sink: batch {batchId} aborted: {_aborted(messages)} (a replay sends them again with the "
              "same UNIQ_KEYs)", file=sys.stderr)
