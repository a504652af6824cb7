"""Options and offset planning of the ``rocketmq`` source and sink (a running broker), free of pyspark.

Offsets, as Spark checkpoints them, are JSON ``{topic: {"brokerName:queueId": queueOffset}}``: a queue
lives on one broker, and two brokers may both have queue 0 of a topic.  An offset is the next queue offset
to read; a micro-batch reads ``[start, end)`` of every queue, so replaying a batch from the checkpoint reads
exactly the same messages (the partitions are a pure function of the two offsets).

Option names follow Spark's Kafka source where they fit; docs/spark.md lists them.  TLS (4.9.3's useTLS and
``tls.client.*`` names) is an option because executors are fresh Python workers: nothing set up in the
driver's process (``use_client_tls``) reaches them, and the files the options name are opened there.
Imports the client's MessageQueue, TlsConfig and the error base only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from rocketstore.client import MessageQueue, MessageSelector, SessionCredentials
from rocketstore.errors import RocketStoreError
from rocketstore.message.names import group_problem
from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql
from rocketstore.remoting.bodies import build_subscription
from rocketstore.remoting.tls import TlsConfig, TlsConfigError
from rocketstore.remoting.transport import namesrv_addresses
from rocketstore.spark.store_options import batch_marker_problem, is_system_topic

__all__ = [
    "FROM_KEY",
    "MARKS_KEY",
    "Offsets",
    "PullRange",
    "SinkOptions",
    "SourceOptions",
    "SparkOptionError",
    "limit_offsets",
    "plan_pull_ranges",
    "queue_key",
    "queue_of",
]

#: {topic: {"brokerName:queueId": offset}}
Offsets = dict[str, dict[str, int]]
_EARLIEST, _LATEST = -2, -1
DEFAULT_PULL_BATCH = 32
#: Kafka's source: a failed look-up or pull is tried 3 more times 10 ms apart
DEFAULT_FETCH_RETRIES = 3
DEFAULT_FETCH_RETRY_INTERVAL_MS = 10
#: reconnectTimeoutMs: how long a name server or broker that cannot be reached is waited for.  Kafka's consumer
#: keeps reconnecting inside each call for up to its default.api.timeout.ms (60 s), so its source rides out a
#: broker restart before fetchOffset.numRetries counts a failure; the client here fails at once on a refused
#: connection, so the source does the waiting.  0 when fetchOffset.numRetries is given alone: such a query
#: bounded an outage by its tries before this option existed, and still does
DEFAULT_RECONNECT_TIMEOUT_MS = 60_000


class SparkOptionError(RocketStoreError):
    """An option of the ``rocketmq`` source or sink that cannot be used."""


def queue_key(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


def queue_of(topic: str, key: str) -> MessageQueue:
    broker, _, qid = key.rpartition(":")
    if not broker or not qid.isdigit():
        raise SparkOptionError(f"offset key {key!r} of topic {topic!r} is not 'brokerName:queueId'")
    return MessageQueue(topic, broker, int(qid))


class PullRange(NamedTuple):
    """Queue offsets ``[start, end)`` of one queue; ``fresh`` when the queue appeared after the start."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int
    fresh: bool = False

    @property
    def queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    # Spark hands a case-insensitive mapping; iterate it rather than dict() it
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _int(opts: dict[str, str], key: str, name: str, minimum: int | None = None) -> int | None:
    raw = opts.get(key)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw.strip())
    except ValueError as exc:
        raise SparkOptionError(f"option {name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise SparkOptionError(f"option {name} must be at least {minimum}")
    return value


def _bool(opts: dict[str, str], key: str, name: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    text = raw.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise SparkOptionError(f"option {name}={raw!r} is not true or false")


def _credentials(opts: dict[str, str]) -> SessionCredentials | None:
    """options accessKey + secretKey (ACL), None without them."""
    access_key, secret_key = opts.get("accesskey"), opts.get("secretkey")
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        raise SparkOptionError("ACL needs both options 'accessKey' and 'secretKey'")
    return SessionCredentials(access_key, secret_key)


#: option (lower case) -> the tls.properties name it gives (4.9.3's TlsSystemConfig names)
_TLS_CLIENT_OPTIONS = {"tls.client.authserver": "tls.client.authServer",
                       "tls.client.trustcertpath": "tls.client.trustCertPath",
                       "tls.client.certpath": "tls.client.certPath", "tls.client.keypath": "tls.client.keyPath",
                       "tls.client.keypassword": "tls.client.keyPassword"}
#: the tls.properties names above that name files
_TLS_CLIENT_FILES = frozenset({"tls.client.trustCertPath", "tls.client.certPath", "tls.client.keyPath"})


def _tls(opts: dict[str, str]) -> TlsConfig | None:
    """options useTLS (4.9.3's ClientConfig.useTLS) and ``tls.client.*``: None without any (the process's
    choice, plain on an executor), else the clients' TLS settings; a ``tls.client.*`` option implies
    useTLS=true.  The files are opened where the clients run (the driver and every executor)."""
    given = {name: opts[key] for key, name in _TLS_CLIENT_OPTIONS.items() if opts.get(key, "").strip()}
    for name in _TLS_CLIENT_FILES & given.keys():
        # resolved here, where planning runs: an executor opens the file from its own working directory
        # (work/app-*/N on a cluster), so a relative path would name nothing there
        given[name] = os.path.abspath(os.path.expanduser(given[name].strip()))
    if "usetls" not in opts and not given:
        return None
    use = _bool(opts, "usetls", "useTLS", True)
    if not use:
        if given:
            raise SparkOptionError(f"useTLS=false contradicts option(s) {', '.join(sorted(given))}")
        return TlsConfig(client_enable=False)
    if "tls.client.authServer" in given:  # checked as the other flags are: a typo must not turn the check off
        auth_server = _bool(opts, "tls.client.authserver", "tls.client.authServer", False)
        given["tls.client.authServer"] = "true" if auth_server else "false"
    try:
        return TlsConfig.from_properties({**given, "tls.enable": "true"})
    except TlsConfigError as exc:
        raise SparkOptionError(f"TLS options: {exc}") from exc


def _name_server(opts: dict[str, str]) -> str:
    """The nameServer option, each ``;``-separated address checked here: a port that is no port would fail
    later, on the driver or in every task, with a ValueError or as a topic without a route."""
    ns = opts.get("nameserver") or opts.get("namesrvaddr")
    if not ns:
        raise SparkOptionError("the rocketmq source and sink need option 'nameServer' (host:port[;host:port])")
    parts, bad = namesrv_addresses(ns)
    if bad is not None:
        raise SparkOptionError(f"option nameServer: {bad!r} is not host:port (a port from 1 to 65535)")
    if not parts:
        raise SparkOptionError("the rocketmq source and sink need option 'nameServer' (host:port[;host:port])")
    return ";".join(parts)


def _group(opts: dict[str, str], key: str, name: str) -> str | None:
    """A group name option, checked as Java's clients check theirs before they start (Validators.checkGroup):
    the broker would refuse the consumer's offset commits after its first batch, or store any producer group."""
    group = opts.get(key) or None
    problem = None if group is None else group_problem(group)
    if problem is not None:
        raise SparkOptionError(f"option {name}: {problem}")
    return group


OffsetSpec = str | dict[str, dict[str, int]]

#: the key of the source's offsets (no topic can be named so: '@' is no topic name character) that holds, per
#: queue, one message the query read before the queue's offset: [queueOffset, commitLogOffset, storeTimestampMs]
#: (stream_source._Planner.checked_marks)
MARKS_KEY = "@marks"
#: the key of end offsets naming queues that the batch ending there reads from another offset than its start
#: offsets' (a queue found to be a new one, read from its min offset with failOnDataLoss=false)
FROM_KEY = "@from"


def _offsets_spec(raw: str, name: str, allowed: tuple[str, ...]) -> OffsetSpec:
    text = raw.strip()
    if text.lower() in allowed:
        return text.lower()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SparkOptionError(f"option {name} is neither {' nor '.join(allowed)} nor JSON: {exc}") from exc
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise SparkOptionError(f'option {name} must be a JSON object like {{"TopicA":{{"broker-a:0":23,"1":-2}}}}')
    spec: dict[str, dict[str, int]] = {}
    for topic, queues in doc.items():
        if topic in (MARKS_KEY, FROM_KEY):
            continue  # offsets the source wrote (a query's endOffset copied from its progress): the queues' own
        if str(topic).startswith("@"):
            raise SparkOptionError(f"option {name}: {topic!r} is no topic name, nor one of the source's own keys "
                                   f"({MARKS_KEY}, {FROM_KEY})")
        for key, offset in queues.items():
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < _EARLIEST:
                raise SparkOptionError(f"option {name}: offset {offset!r} of {topic}/{key} is not an integer >= -2 "
                                       "(a queue offset, or -2 earliest, -1 latest)")
            if not str(key).isdigit():
                queue_of(topic, str(key))  # validates the form
        spec[str(topic)] = {str(k): v for k, v in queues.items()}
    return spec


def _offsets_marks(raw: str, name: str) -> dict[str, dict[str, list[int]]] | None:
    """The MARKS_KEY part of an offsets JSON (*raw*, one _offsets_spec took), or None: a query started from
    an endOffset copied from another query's progress checks the queues it reads are still the ones read."""
    try:
        marks = json.loads(raw.strip()).get(MARKS_KEY)
    except (json.JSONDecodeError, AttributeError):
        return None
    if marks is None:
        return None
    if not isinstance(marks, dict) or not all(isinstance(q, dict) for q in marks.values()):
        raise SparkOptionError(f"option {name}: {MARKS_KEY} must look like "
                               f'{{"TopicA":{{"broker-a:0":[queueOffset,commitLogOffset,storeTimestampMs]}}}}')
    for topic, queues in marks.items():
        for key, mark in queues.items():
            if (not isinstance(mark, list) or len(mark) != 3
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in mark)):
                raise SparkOptionError(f"option {name}: {MARKS_KEY} of {topic}/{key} is not [queueOffset, "
                                       f"commitLogOffset, storeTimestampMs]: {mark!r}")
            queue_of(str(topic), str(key))  # validates the form
    return {str(t): {str(k): list(m) for k, m in q.items()} for t, q in marks.items()}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The ``rocketmq`` reader options, validated.  Picklable (partitions carry it to executors)."""

    name_server: str
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[str, ...]] | None = None
    starting_offsets: OffsetSpec = "latest"
    #: the marks (MARKS_KEY) of a JSON startingOffsets, an endOffset the source wrote: checked as a checkpoint's
    starting_marks: dict[str, dict[str, list[int]]] | None = None
    ending_offsets: OffsetSpec = "latest"
    #: the marks of a JSON endingOffsets (a stream's endOffset: read up to where it got), checked as the start's
    ending_marks: dict[str, dict[str, list[int]]] | None = None
    starting_timestamp_ms: int | None = None
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    tags: str = "*"
    #: an SQL92 expression over message properties, filtered by the broker (enablePropertyFilter=true) instead
    #: of ``tags``
    sql: str | None = None
    consumer_group: str | None = None
    pull_batch: int = DEFAULT_PULL_BATCH
    timeout_s: float = 5.0
    #: accessKey / secretKey: the ACL keys every request is signed with
    credentials: SessionCredentials | None = None
    #: useTLS / tls.client.*: the clients' TLS (None: the process's, plain on executors)
    tls: TlsConfig | None = None
    #: fetchOffset.numRetries / fetchOffset.retryIntervalMs (Kafka's source): how often the driver's offset and
    #: route look-ups of a trigger, and the executors' pulls, are tried again, and how long apart, before failing
    fetch_retries: int = DEFAULT_FETCH_RETRIES
    fetch_retry_interval_s: float = DEFAULT_FETCH_RETRY_INTERVAL_MS / 1000
    #: reconnectTimeoutMs: how long a name server or broker that cannot be reached (a restart) is waited for,
    #: trying again with a growing pause, before the look-up or pull fails (0: it is a failed try as any other)
    reconnect_timeout_s: float = DEFAULT_RECONNECT_TIMEOUT_MS / 1000

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        opts = _lower(options)
        chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
        if len(chosen) != 1:
            raise SparkOptionError("give exactly one of 'subscribe', 'subscribePattern' or 'assign'")
        subscribe = pattern = assign = None
        if "subscribe" in chosen:
            subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
            if not subscribe:
                raise SparkOptionError("option 'subscribe' names no topic")
        elif "subscribepattern" in chosen:
            pattern = opts["subscribepattern"]
            try:
                re.compile(pattern)
            except re.error as exc:
                raise SparkOptionError(f"subscribePattern {pattern!r} is not a regular expression: {exc}") from exc
        else:
            try:
                doc = json.loads(opts["assign"])
            except json.JSONDecodeError as exc:
                raise SparkOptionError(f"option assign is not JSON: {exc}") from exc
            if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()):
                raise SparkOptionError('option assign must look like {"TopicA":["broker-a:0", 1]}')
            assign = {str(t): tuple(str(q) for q in qs) for t, qs in doc.items()}
        starting_ts = _int(opts, "startingtimestamp", "startingTimestamp", 0)
        if "endingtimestamp" in opts:  # rocketmq-store has it: ignored here, the read would go on to the end
            raise SparkOptionError("option endingTimestamp is not supported by the rocketmq source (only by "
                                   "rocketmq-store); give endingOffsets")
        for key, name, ours in (
                ("startingoffsetsbytimestamp", "startingOffsetsByTimestamp", "startingTimestamp"),
                ("startingoffsetsbytimestampstrategy", "startingOffsetsByTimestampStrategy",
                 "startingTimestamp"),
                ("endingoffsetsbytimestamp", "endingOffsetsByTimestamp", "endingOffsets")):
            if key in opts:  # Kafka's: ignored, the read would start or end elsewhere than the time meant
                raise SparkOptionError(f"option {name} (Kafka's) is not supported by the rocketmq source: "
                                       f"give {ours}")
        if starting_ts is not None and "startingoffsets" in opts:
            raise SparkOptionError("give either 'startingOffsets' or 'startingTimestamp', not both")
        default_start = "latest" if streaming else "earliest"
        group = _group(opts, "consumergroup", "consumerGroup")
        start = _offsets_spec(opts.get("startingoffsets", default_start), "startingOffsets",
                              ("earliest", "latest", "group"))
        if start == "group" and group is None:
            raise SparkOptionError("startingOffsets=group needs option 'consumerGroup'")
        if start == "latest" and not streaming:  # as Spark's Kafka source: such a batch always reads nothing
            raise SparkOptionError("startingOffsets=latest is for streaming queries only: a batch query ends at "
                                   "the latest offsets (endingOffsets); give earliest, group or JSON")
        end = _offsets_spec(opts.get("endingoffsets", "latest"), "endingOffsets", ("latest",))
        if streaming and "endingoffsets" in opts:
            raise SparkOptionError("endingOffsets is for batch queries only")
        if not streaming:  # the JSON forms of startingOffsets=latest and endingOffsets=earliest, queue by queue
            for problem in (batch_marker_problem(start, _LATEST, "startingOffsets", "latest"),
                            batch_marker_problem(end, _EARLIEST, "endingOffsets", "earliest")):
                if problem is not None:
                    raise SparkOptionError(problem)
        max_per_trigger = _int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", 1)
        if max_per_trigger is not None and not streaming:
            raise SparkOptionError("maxOffsetsPerTrigger is for streaming queries only")
        for key, name in (("minoffsetspertrigger", "minOffsetsPerTrigger"),
                          ("maxtriggerdelay", "maxTriggerDelay")):
            if key in opts:  # Kafka's: ignored, every trigger would still run a batch of whatever had arrived
                raise SparkOptionError(f"option {name} (Kafka's) is not supported by the rocketmq source: "
                                       "each trigger reads what has arrived (up to maxOffsetsPerTrigger); "
                                       "for larger batches give the query a longer processingTime trigger")
        tags = (opts.get("tags") or "*").strip() or "*"
        sql = (opts.get("sql") or "").strip() or None
        if sql is None and "sql" in opts:
            # an empty filter (an unset variable) would read every message: refused, as the CLI's --sql
            raise SparkOptionError("option sql is empty: give a SQL92 expression, or leave the option out")
        if sql is not None:
            if "tags" in opts:
                raise SparkOptionError("give either 'tags' or 'sql', not both")
            try:
                compile_sql(sql)
            except SqlSyntaxError as exc:
                raise SparkOptionError(f"option sql: {exc}") from exc
        else:
            if build_subscription("", tags).names_no_tag:  # every executor pull would refuse it, late, unnamed
                raise SparkOptionError(f"option tags: the tag expression {tags!r} names no tag")
        timeout_ms = _int(opts, "timeoutms", "timeoutMs", 1) or 5000
        retries = _int(opts, "fetchoffset.numretries", "fetchOffset.numRetries", 0)
        interval_ms = _int(opts, "fetchoffset.retryintervalms", "fetchOffset.retryIntervalMs", 0)
        reconnect_ms = _int(opts, "reconnecttimeoutms", "reconnectTimeoutMs", 0)
        if reconnect_ms is None:
            reconnect_ms = DEFAULT_RECONNECT_TIMEOUT_MS if retries is None else 0
        return cls(name_server=_name_server(opts), subscribe=subscribe, subscribe_pattern=pattern, assign=assign,
                   starting_offsets=start, ending_offsets=end, starting_timestamp_ms=starting_ts,
                   starting_marks=(_offsets_marks(opts["startingoffsets"], "startingOffsets")
                                   if isinstance(start, dict) else None),
                   ending_marks=(_offsets_marks(opts["endingoffsets"], "endingOffsets")
                                 if isinstance(end, dict) else None),
                   max_offsets_per_trigger=max_per_trigger,
                   min_partitions=_int(opts, "minpartitions", "minPartitions", 1),
                   fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
                   tags=tags, sql=sql, consumer_group=group,
                   pull_batch=_int(opts, "pullbatchsize", "pullBatchSize", 1) or DEFAULT_PULL_BATCH,
                   timeout_s=timeout_ms / 1000, credentials=_credentials(opts), tls=_tls(opts),
                   fetch_retries=DEFAULT_FETCH_RETRIES if retries is None else retries,
                   fetch_retry_interval_s=(DEFAULT_FETCH_RETRY_INTERVAL_MS if interval_ms is None
                                           else interval_ms) / 1000,
                   reconnect_timeout_s=reconnect_ms / 1000)

    @property
    def selector(self) -> MessageSelector:
        """What each pull asks the broker for: the SQL92 expression when given, else the tags."""
        return MessageSelector.by_sql(self.sql) if self.sql is not None else MessageSelector.by_tag(self.tags)

    @property
    def pull_group(self) -> str:
        """The group pulls are made under: the consumerGroup when given (offsets are only committed in commit())."""
        return self.consumer_group or "spark-rocketmq-reader"

    def wants_topic(self, topic: str) -> bool:
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.assign is not None:
            return topic in self.assign
        assert self.subscribe_pattern is not None
        return not is_system_topic(topic) and re.fullmatch(self.subscribe_pattern, topic) is not None

    def wants_queue(self, mq: MessageQueue) -> bool:
        if self.assign is None:
            return True
        wanted = self.assign.get(mq.topic, ())
        return str(mq.queue_id) in wanted or queue_key(mq) in wanted

    @staticmethod
    def spec_offset(spec: dict[str, dict[str, int]], mq: MessageQueue) -> int | None:
        """The offset *spec* gives *mq* ("broker:qid" first, then a bare queue id), or None."""
        per_topic = spec.get(mq.topic, {})
        value = per_topic.get(queue_key(mq))
        return per_topic.get(str(mq.queue_id)) if value is None else value


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The ``rocketmq`` writer options, validated."""

    name_server: str
    topic: str | None = None
    producer_group: str = "spark-rocketmq-writer"
    batch_messages: int = 64
    timeout_s: float = 5.0
    credentials: SessionCredentials | None = None
    tls: TlsConfig | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = _lower(options)
        return cls(name_server=_name_server(opts), topic=opts.get("topic") or None,
                   producer_group=_group(opts, "producergroup", "producerGroup") or "spark-rocketmq-writer",
                   batch_messages=_int(opts, "batchmessages", "batchMessages", 1) or 64,
                   timeout_s=(_int(opts, "timeoutms", "timeoutMs", 1) or 5000) / 1000,
                   credentials=_credentials(opts), tls=_tls(opts))


def limit_offsets(start: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """*latest* cut so that at most *max_rows* entries lie between *start* and it, shared out in proportion
    to each queue's backlog (Kafka's maxOffsetsPerTrigger); deterministic for the same inputs.

    No queue with a backlog starves: each gets at least one entry, and the rest is shared in proportion
    (what the rounding leaves goes to the largest remainders).  With more such queues than *max_rows*, the
    single entries go to *max_rows* of them in turn, starting where the queues' offsets (which every trigger
    moves on by *max_rows*) point, so consecutive triggers take the next ones."""
    lags: list[tuple[str, str, int, int]] = []  # topic, key, from, backlog
    for topic, queues in sorted(latest.items()):
        for key, end in sorted(queues.items()):
            begin = start.get(topic, {}).get(key, 0)
            lags.append((topic, key, begin, max(0, end - begin)))
    total = sum(lag for *_, lag in lags)
    if total <= max_rows:
        return latest
    waiting = [i for i, (*_, lag) in enumerate(lags) if lag > 0]
    shares = [0] * len(lags)
    if len(waiting) >= max_rows:
        first = sum(begin for _, _, begin, _ in lags) % len(waiting)
        for i in (waiting[first:] + waiting[:first])[:max_rows]:
            shares[i] = 1
    else:
        rest, over = max_rows - len(waiting), total - len(waiting)  # rest < over: total > max_rows
        for i in waiting:
            shares[i] = 1 + (lags[i][3] - 1) * rest // over
        left = max_rows - sum(shares)
        by_remainder = sorted((i for i in waiting if (lags[i][3] - 1) * rest % over),
                              key=lambda i: -((lags[i][3] - 1) * rest % over))
        for i in by_remainder[:left]:  # a non-zero remainder leaves the share below the backlog
            shares[i] += 1
    out: Offsets = {}
    for (topic, key, begin, _), share in zip(lags, shares):
        out.setdefault(topic, {})[key] = begin + share
    return out


def plan_pull_ranges(start: Offsets, end: Offsets, min_partitions: int | None) -> list[list[PullRange]]:
    """The micro-batch ``start -> end`` as partitions of queue ranges; a pure function of its arguments.

    A queue in *end* but not in *start* appeared after the previous batch and is read from 0 (its reader
    skips up to the queue's minimum without calling that data loss).  Queues are cut into equal pieces
    until there are at least *min_partitions* ranges.
    """
    ranges = []
    for topic, queues in sorted(end.items()):
        for key, until in sorted(queues.items()):
            mq = queue_of(topic, key)
            known = start.get(topic, {}).get(key)
            begin = 0 if known is None else known
            if until > begin:
                ranges.append(PullRange(topic, mq.broker_name, mq.queue_id, begin, until, known is None))
    if min_partitions is None or len(ranges) >= min_partitions or not ranges:
        return [[r] for r in ranges]
    total = sum(r.end - r.start for r in ranges)
    pieces: list[list[PullRange]] = []
    for r in ranges:
        count = max(1, round(min_partitions * (r.end - r.start) / total))
        step = -(-(r.end - r.start) // count)
        for s in range(r.start, r.end, step):
            pieces.append([r._replace(start=s, end=min(r.end, s + step))])
    return pieces
