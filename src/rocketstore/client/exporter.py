"""A Prometheus exporter for RocketMQ clusters: what apache/rocketmq-exporter serves, read over the admin API.

:func:`collect` asks the name servers and every master (ours or real RocketMQ 4.x brokers alike) what
the exporter's collector reads, and returns samples under the exporter's metric names and label sets, so
that dashboards built for it (Grafana 10477, "RocketMQ Exporter Overview") and alert rules keep working:

========================================== =========================================== ==========================
metric                                     labels                                      from
========================================== =========================================== ==========================
rocketmq_broker_tps / _qps                 cluster, brokerIP, broker                   BROKER_PUT_NUMS / BROKER_GET_NUMS, last minute
rocketmq_brokeruntime_*                    cluster, brokerIP, brokerHost, des,         GET_BROKER_RUNTIME_INFO
                                           boottime, broker_version
rocketmq_producer_tps / _message_size      cluster, broker, topic                      TOPIC_PUT_NUMS / TOPIC_PUT_SIZE, last minute
rocketmq_producer_offset                   cluster, broker, topic                      the topic's max offsets on the broker, summed
rocketmq_topic_retry_offset                cluster, broker, topic                      the same, of a %RETRY% topic
rocketmq_topic_dlq_offset                  cluster, broker, group                      the same, of a %DLQ% topic
rocketmq_consumer_tps / _message_size      cluster, broker, topic, group               GROUP_GET_NUMS / GROUP_GET_SIZE, last minute
rocketmq_send_back_nums                    cluster, broker, topic, group               SNDBCK_PUT_NUMS, last minute's sum
rocketmq_consumer_offset                   cluster, broker, topic, group               the group's committed offsets, summed
rocketmq_group_get_latency_by_storetime    cluster, broker, topic, group               ms since the store time of the first message
                                                                                       not consumed (0 when caught up), worst queue
rocketmq_group_diff / _retrydiff / _dlqdiff group, topic, countOfOnlineConsumers,      messages not consumed, over every broker
                                           msgModel
rocketmq_group_count                       caddr, localaddr, group                     the group's online clients (their addresses
                                                                                       and client ids, comma-joined)
rocketmq_client_*                          clientAddr, clientId, group, topic          each online client's own figures
                                                                                       (GET_CONSUMER_RUNNING_INFO, relayed by a broker)
rocketmq_broker_commitlog_diff             cluster, brokerIP, broker                   master's commitlog max offset minus a slave's
========================================== =========================================== ==========================

A topic's or group's rate the broker has no stat item for (nothing put or got under it since the broker
started: TBW102, the cluster's and broker's own topics) is not served, as rocketmq-exporter serves none (the
broker's own rates are 0 then); nor are a group's rates of its %RETRY% topic.  What one broker or client
cannot answer (down, refusing) is left out of that scrape and counted in
``rocketstore_exporter_scrape_errors``; the others are still served.  :class:`MetricsServer` answers
``GET /metrics`` over HTTP with the text format, collecting at most once per ``min_interval_s``.
Loop-bound.  Imports remoting only (through the client package).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

from rocketstore.client.admin import AdminClient
from rocketstore.client.admin_types import ConsumerConnectionInfo, QueueProgress, QueueStats
from rocketstore.client.consumer import PullConsumer
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import BrokerError
from rocketstore.client.message_admin import TOOLS_CONSUMER_GROUP
from rocketstore.client.route import MessageQueue
from rocketstore.errors import ProtocolError, RemotingError, RocketStoreError
from rocketstore.message.system_topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.transport import dual_stack_listener

__all__ = ["METRICS", "MetricsServer", "Sample", "collect", "render"]

log = logging.getLogger(__name__)

#: metric name -> (type, help text); the help texts are the exporter's
METRICS: dict[str, tuple[str, str]] = {
    "rocketmq_broker_tps": ("gauge", "BrokerPutNums"),
    "rocketmq_broker_qps": ("gauge", "BrokerGetNums"),
    "rocketmq_producer_tps": ("gauge", "TopicPutNums"),
    "rocketmq_producer_message_size": ("gauge", "TopicPutMessageSize"),
    "rocketmq_producer_offset": ("gauge", "TopicOffset"),
    "rocketmq_topic_retry_offset": ("gauge", "TopicRetryOffset"),
    "rocketmq_topic_dlq_offset": ("gauge", "TopicDLQOffset"),
    "rocketmq_consumer_tps": ("gauge", "GroupGetNums"),
    "rocketmq_consumer_message_size": ("gauge", "GroupGetMessageSize"),
    "rocketmq_send_back_nums": ("gauge", "SendBackNums"),
    "rocketmq_consumer_offset": ("gauge", "GroupBrokerTotalOffset"),
    "rocketmq_group_get_latency_by_storetime": ("gauge", "GroupGetLatencyByStoreTime"),
    "rocketmq_group_diff": ("gauge", "GroupDiff"),
    "rocketmq_group_retrydiff": ("gauge", "GroupRetryDiff"),
    "rocketmq_group_dlqdiff": ("gauge", "GroupDLQDiff"),
    "rocketmq_group_count": ("gauge", "GroupCount"),
    "rocketmq_client_consume_fail_msg_count": ("gauge", "consumerClientFailedMsgCounts"),
    "rocketmq_client_consume_fail_msg_tps": ("gauge", "consumerClientFailedTPS"),
    "rocketmq_client_consume_ok_msg_tps": ("gauge", "consumerClientOKTPS"),
    "rocketmq_client_consume_rt": ("gauge", "consumerClientRT"),
    "rocketmq_client_consumer_pull_rt": ("gauge", "consumerClientPullRT"),
    "rocketmq_client_consumer_pull_tps": ("gauge", "consumerClientPullTPS"),
    "rocketmq_broker_commitlog_diff": ("gauge", "brokerCommitLogDiffGauge"),
    "rocketstore_exporter_scrape_errors": ("gauge", "brokers or topics the last collection could not read"),
    "rocketstore_exporter_scrape_duration_seconds": ("gauge", "how long the last collection took"),
}

#: rocketmq_brokeruntime_<suffix> -> (runtime info key, how its text reads): "int", "float", "rate<i>" (the
#: i-th figure of a "tps10 tps60 tps600" text) or "bytes" (a human size such as "12.5 MiB")
_RUNTIME: dict[str, tuple[str, str]] = {
    "msg_put_total_today_now": ("msgPutTotalTodayNow", "int"),
    "msg_gettotal_today_now": ("msgGetTotalTodayNow", "int"),
    "msg_puttotal_todaymorning": ("msgPutTotalTodayMorning", "int"),
    "msg_gettotal_todaymorning": ("msgGetTotalTodayMorning", "int"),
    "msg_puttotal_yesterdaymorning": ("msgPutTotalYesterdayMorning", "int"),
    "msg_gettotal_yesterdaymorning": ("msgGetTotalYesterdayMorning", "int"),
    "dispatch_behind_bytes": ("dispatchBehindBytes", "int"),
    "put_message_size_total": ("putMessageSizeTotal", "int"),
    "put_message_average_size": ("putMessageAverageSize", "float"),
    "putmessage_times_total": ("putMessageTimesTotal", "int"),
    "putmessage_entire_time_max": ("putMessageEntireTimeMax", "int"),
    "getmessage_entire_time_max": ("getMessageEntireTimeMax", "int"),
    "earliest_message_timestamp": ("earliestMessageTimeStamp", "int"),
    "pagecache_lock_time_mills": ("pageCacheLockTimeMills", "int"),
    "commitlog_disk_ratio": ("commitLogDiskRatio", "float"),
    "consumequeue_disk_ratio": ("consumeQueueDiskRatio", "float"),
    "commitlog_maxoffset": ("commitLogMaxOffset", "int"),
    "commitlog_minoffset": ("commitLogMinOffset", "int"),
    "remain_howmanydata_toflush": ("remainHowManyDataToFlush", "bytes"),
    "put_tps10": ("putTps", "rate0"),
    "put_tps60": ("putTps", "rate1"),
    "put_tps600": ("putTps", "rate2"),
    "gettransfered_tps10": ("getTransferedTps", "rate0"),
    "gettransfered_tps60": ("getTransferedTps", "rate1"),
    "gettransfered_tps600": ("getTransferedTps", "rate2"),
    "getfound_tps10": ("getFoundTps", "rate0"),
    "getfound_tps60": ("getFoundTps", "rate1"),
    "getfound_tps600": ("getFoundTps", "rate2"),
    "getmiss_tps10": ("getMissTps", "rate0"),
    "getmiss_tps60": ("getMissTps", "rate1"),
    "getmiss_tps600": ("getMissTps", "rate2"),
    "gettotal_tps10": ("getTotalTps", "rate0"),
    "gettotal_tps60": ("getTotalTps", "rate1"),
    "gettotal_tps600": ("getTotalTps", "rate2"),
    "dispatch_maxbuffer": ("dispatchMaxBuffer", "int"),
    "remain_transientstore_buffer_numbs": ("remainTransientStoreBufferNumbs", "int"),
    "start_accept_sendrequest_time": ("startAcceptSendRequestTimeStamp", "int"),
    "send_threadpool_queue_size": ("sendThreadPoolQueueSize", "int"),
    "send_threadpoolqueue_capacity": ("sendThreadPoolQueueCapacity", "int"),
    "send_threadpoolqueue_headwait_timemills": ("sendThreadPoolQueueHeadWaitTimeMills", "int"),
    "pull_threadpoolqueue_size": ("pullThreadPoolQueueSize", "int"),
    "pull_threadpoolqueue_capacity": ("pullThreadPoolQueueCapacity", "int"),
    "pull_threadpoolqueue_headwait_timemills": ("pullThreadPoolQueueHeadWaitTimeMills", "int"),
    "query_threadpoolqueue_size": ("queryThreadPoolQueueSize", "int"),
    "query_threadpool_queue_capacity": ("queryThreadPoolQueueCapacity", "int"),
    "query_threadpoolqueue_headwait_timemills": ("queryThreadPoolQueueHeadWaitTimeMills", "int"),
    # "Total : 252.0 GiB, Free : 64.6 GiB." in bytes
    "commitlogdir_capacity_total": ("commitLogDirCapacity", "capacity0"),
    "commitlogdir_capacity_free": ("commitLogDirCapacity", "capacity1"),
    # figures a 4.9.3 broker does not report: the exporter serves -1 then (_RUNTIME_DEFAULTS)
    "put_latency_99": ("putLatency99", "float"),
    "put_latency_999": ("putLatency999", "float"),
}
#: rocketmq_brokeruntime_pmdt_<suffix> -> its band in putMessageDistributeTime (served once the broker has
#: a finished minute of bands: "null" before)
_PUT_LATENCY_BANDS = {"0ms": "[<=0ms]", "0to10ms": "[0~10ms]", "10to50ms": "[10~50ms]", "50to100ms": "[50~100ms]",
                      "100to200ms": "[100~200ms]", "200to500ms": "[200~500ms]", "500to1s": "[500ms~1s]",
                      "1to2s": "[1~2s]", "2to3s": "[2~3s]", "3to4s": "[3~4s]", "4to5s": "[4~5s]",
                      "5to10s": "[5~10s]", "10stomore": "[10s~]"}
#: runtime info keys a 4.9.3 broker may leave out, with the value the exporter serves then
_RUNTIME_DEFAULTS = {"putLatency99": "-1", "putLatency999": "-1"}
for _suffix, (_key, _kind) in _RUNTIME.items():
    METRICS[f"rocketmq_brokeruntime_{_suffix}"] = ("gauge", _key)
for _suffix in _PUT_LATENCY_BANDS:
    METRICS[f"rocketmq_brokeruntime_pmdt_{_suffix}"] = ("gauge", "putMessageDistributeTime")

_SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60,
               "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
#: MessageModel.CLUSTERING's ordinal, the msgModel label of every group diff (as the exporter, only
#: clustering groups have a diff: a broadcasting one keeps its offsets in its clients)
_CLUSTERING = "1"
#: what reading one answer may raise, all of it the peer's doing: no connection, no answer in time, an error
#: code, a body that does not decode or reads in an unexpected shape (the admin client raises its own
#: errors for those: ProtocolError, ClientError), which leave that series out rather than the whole
#: collection.  Not ValueError, TypeError, AttributeError or KeyError: raised here, those are the exporter's
#: own bugs, which must fail the collection rather than show as a broker that answered badly
_READ_ERRORS = (RocketStoreError, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


def _runtime_value(text: str, kind: str) -> float | None:
    """A runtime info figure as a number; None when the broker's text does not read as *kind*."""
    try:
        if kind == "int":
            return float(int(text))
        if kind == "float":
            return float(text)
        if kind.startswith("rate"):  # a window without its samples yet is blank: 0, as the exporter reads it
            rates = text.split(" ")
            i = int(kind[4:])
            return float(rates[i]) if i < len(rates) and rates[i] else 0.0
        if kind.startswith("capacity"):  # "Total : <size>, Free : <size>."
            text = text.rstrip(".").split(",")[int(kind[8:])].partition(":")[2]
        number, _, unit = text.strip().partition(" ")
        return float(number) * _SIZE_UNITS[unit or "B"]
    except (ValueError, IndexError, KeyError):
        return None


class _Collection:
    """One scrape: the samples gathered so far and how many things could not be read."""

    def __init__(self, admin: AdminClient) -> None:
        self.admin = admin
        self.samples: list[Sample] = []
        self.errors = 0
        #: masters that did not answer (no connection, no response) in this collection, whichever call it
        #: was: not asked again in it, so that one hung broker costs one timeout, not one per topic and group
        self.down: set[str] = set()

    def failed(self, addr: str, exc: BaseException) -> None:
        """A call to *addr* failed: counted; the broker is down for the rest of the collection when it
        could not be reached (an answer that is an error, or that could not be read, leaves it up)."""
        self.errors += 1
        if _unreachable(exc):
            self.down.add(addr)

    def add(self, name: str, value: float, **labels: str) -> None:
        self.samples.append(Sample(name, tuple(labels.items()), float(value)))

    async def rate(self, addr: str, stats_name: str, key: str) -> float | None:
        """The last minute's per-second rate of a stat item, with two decimals as the exporter serves it
        (Utils.getFixedDouble: DecimalFormat "#.##", half even, which Python's round matches); None when the
        broker has no such item (nothing counted under the key since it started): the exporter serves no
        sample then, so a topic never put to (TBW102, the cluster's and broker's own topics) is not listed."""
        try:
            return round((await self.admin.view_stats(addr, stats_name, key)).minute.tps, 2)
        except BrokerError:
            return None

    async def minute_sum(self, addr: str, stats_name: str, key: str) -> float | None:
        """What a stat item counted in the last minute; None when the broker has no such item."""
        try:
            return (await self.admin.view_stats(addr, stats_name, key)).minute.sum
        except BrokerError:
            return None

    def add_known(self, name: str, value: float | None, **labels: str) -> None:
        """:meth:`add`, unless *value* is None (a stat item the broker does not have)."""
        if value is not None:
            self.add(name, value, **labels)


async def collect(admin: AdminClient, *, cluster: str | None = None) -> list[Sample]:
    """Every metric of the masters the name servers know (of *cluster* only, when given: ClientError when the
    name servers do not know it, rather than a collection without a broker that looks like a healthy one)."""
    began = time.monotonic()
    c = _Collection(admin)
    info = await admin.cluster_info()
    info.require(cluster)
    brokers: dict[str, tuple[str, str]] = {}  # broker name -> (cluster, master address)
    for cluster_name, names in sorted(info.clusters.items()):
        if cluster is not None and cluster_name != cluster:
            continue
        for name, addr in info.masters(cluster_name).items():
            brokers[name] = (cluster_name, addr)
    for name, (cluster_name, addr) in brokers.items():
        try:
            master_max = await _broker(c, cluster_name, name, addr)
        except _READ_ERRORS as exc:
            log.warning("exporter: broker %s (%s) could not be read: %s", name, addr, exc)
            c.failed(addr, exc)
            continue
        slaves = sorted(a for a in info.brokers[name].broker_addrs.values() if a != addr)
        if slaves and master_max is not None:
            await _slaves(c, cluster_name, name, master_max, slaves)
    consuming = await _topics(c, brokers)
    await _groups(c, brokers, consuming)
    c.add("rocketstore_exporter_scrape_errors", c.errors)
    c.add("rocketstore_exporter_scrape_duration_seconds", round(time.monotonic() - began, 6))
    return c.samples


async def _broker(c: _Collection, cluster: str, name: str, addr: str) -> float | None:
    """The master's figures; returns its commitlog max offset (None when its runtime info has none).  A
    runtime info answered with an error (or unreadable) costs its own series only, as in rocketmq-exporter,
    which reads the rates on their own."""
    table: dict[str, str] | None
    try:
        table = await c.admin.runtime_info(addr)
    except _READ_ERRORS as exc:
        if _unreachable(exc):
            raise
        log.warning("exporter: the runtime info of broker %s (%s) could not be read: %s", name, addr, exc)
        c.errors += 1
        table = None
    ip = addr.rsplit(":", 1)[0]
    # 0 rather than no sample before the first put / get: the dashboard lists its brokers by this metric
    c.add("rocketmq_broker_tps", await c.rate(addr, "BROKER_PUT_NUMS", cluster) or 0.0, cluster=cluster,
          brokerIP=ip, broker=name)
    c.add("rocketmq_broker_qps", await c.rate(addr, "BROKER_GET_NUMS", cluster) or 0.0, cluster=cluster,
          brokerIP=ip, broker=name)
    if table is None:
        return None
    labels = {"cluster": cluster, "brokerIP": addr, "brokerHost": name, "des": table.get("brokerVersionDesc", ""),
              "boottime": table.get("bootTimestamp", ""), "broker_version": table.get("brokerVersion", "")}
    for suffix, (key, kind) in _RUNTIME.items():
        text = table.get(key, _RUNTIME_DEFAULTS.get(key))
        value = None if text is None else _runtime_value(text, kind)
        if value is not None:
            c.add(f"rocketmq_brokeruntime_{suffix}", value, **labels)
    bands = dict(part.rsplit(":", 1) for part in table.get("putMessageDistributeTime", "").split() if ":" in part)
    for suffix, band in _PUT_LATENCY_BANDS.items():
        count = _runtime_value(bands.get(band, ""), "int")
        if count is not None:
            c.add(f"rocketmq_brokeruntime_pmdt_{suffix}", count, **labels)
    return _runtime_value(table.get("commitLogMaxOffset", ""), "int")


async def _slaves(c: _Collection, cluster: str, name: str, master_max: float, slaves: list[str]) -> None:
    """How far each slave's commitlog is behind its master's (the exporter's commitlog diff), both read
    from their runtime info, the master's first (so a busy master reads a little ahead, never behind)."""
    for addr in slaves:
        try:
            slave_max = _runtime_value((await c.admin.runtime_info(addr)).get("commitLogMaxOffset", ""), "int")
        except _READ_ERRORS as exc:
            log.warning("exporter: slave %s of %s could not be read: %s", addr, name, exc)
            c.errors += 1
            continue
        if slave_max is not None:
            c.add("rocketmq_broker_commitlog_diff", master_max - slave_max, cluster=cluster, brokerIP=addr,
                  broker=name)


async def _topics(c: _Collection, brokers: dict[str, tuple[str, str]]) -> dict[str, dict[str, list[str]]]:
    """Offsets and put rates of every topic, per broker holding its queues; returns the groups consuming
    them (online, or with offsets), as the exporter finds groups (queryTopicConsumeByWho): group -> topic
    -> the brokers that answered for the topic's queues."""
    consuming: dict[str, dict[str, list[str]]] = {}
    try:
        topics = await c.admin.topic_list()
    except _READ_ERRORS as exc:
        log.warning("exporter: the topic list could not be read: %s", exc)
        c.errors += 1
        return consuming
    for topic in topics:
        try:
            masters = await c.admin.topic_masters(topic)
        except _READ_ERRORS:
            c.errors += 1
            continue
        queues: list[QueueStats] = []
        for name, addr in masters.items():  # each on its own: one that does not answer costs its figures only
            if name not in brokers or addr in c.down:
                continue
            try:
                queues.extend(await c.admin.topic_stats_on(addr, topic))
            except _READ_ERRORS as exc:
                c.failed(addr, exc)
        held = [brokers[b][1] for b in sorted({q.broker_name for q in queues})
                if b in brokers and brokers[b][1] not in c.down]
        if held and not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            try:
                groups = await c.admin.consumed_by(topic, held)
            except _READ_ERRORS as exc:
                c.failed(held[0], exc)
            else:
                holders = sorted({q.broker_name for q in queues} & set(brokers))
                for group in groups:
                    consuming.setdefault(group, {})[topic] = holders
        offsets: dict[str, int] = defaultdict(int)
        for q in queues:
            offsets[q.broker_name] += q.max_offset
        for broker_name, total in sorted(offsets.items()):
            if broker_name not in brokers:
                continue
            cluster, addr = brokers[broker_name]
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                c.add("rocketmq_topic_retry_offset", total, cluster=cluster, broker=broker_name, topic=topic)
            elif topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                c.add("rocketmq_topic_dlq_offset", total, cluster=cluster, broker=broker_name,
                      group=topic[len(DLQ_GROUP_TOPIC_PREFIX):])
            else:
                c.add("rocketmq_producer_offset", total, cluster=cluster, broker=broker_name, topic=topic)
                if addr in c.down:  # answered its topic stats, then stopped answering
                    continue
                try:
                    tps = await c.rate(addr, "TOPIC_PUT_NUMS", topic)
                    size = await c.rate(addr, "TOPIC_PUT_SIZE", topic)
                except _READ_ERRORS as exc:
                    c.failed(addr, exc)
                    continue
                c.add_known("rocketmq_producer_tps", tps, cluster=cluster, broker=broker_name, topic=topic)
                c.add_known("rocketmq_producer_message_size", size, cluster=cluster, broker=broker_name, topic=topic)
    return consuming


async def _groups(c: _Collection, brokers: dict[str, tuple[str, str]],
                  consuming: dict[str, dict[str, list[str]]]) -> None:
    """Offsets, lag, rates and store-time latency of every group on every broker it has offsets on; online
    clients of those groups and of the *consuming* ones (which may have committed nothing yet); offsets
    (0) and rates of the online broadcasting ones on the brokers of the topics they consume."""
    diffs: dict[tuple[str, str], int] = defaultdict(int)  # (group, topic) -> lag over every broker
    served: set[tuple[str, str, str]] = set()  # (group, topic, broker name) with an offset served
    online: dict[str, ConsumerConnectionInfo | None] = {}
    credentials = c.admin.pool.credentials
    consumer = PullConsumer(";".join(c.admin.namesrv_addrs), TOOLS_CONSUMER_GROUP, timeout_s=c.admin.timeout_s,
                            credentials=credentials if isinstance(credentials, SessionCredentials) else None,
                            tls=c.admin.pool.tls)
    async with consumer:
        for broker_name, (cluster, addr) in brokers.items():
            if addr in c.down:
                continue
            try:
                stats = await c.admin.broker_consume_stats(addr)
            except _READ_ERRORS as exc:
                c.failed(addr, exc)
                continue
            for group, progress_list in sorted(stats.groups.items()):
                if addr in c.down:  # stopped answering since its consume stats: nothing more asked of it
                    break
                if group not in online:
                    online[group] = await _online_consumers(c, brokers, group)
                per_topic: dict[str, list[QueueProgress]] = defaultdict(list)
                for progress in progress_list:
                    for q in progress.queues:
                        if q.broker_name == broker_name:
                            per_topic[q.topic].append(q)
                for topic, queues in sorted(per_topic.items()):
                    diffs[(group, topic)] += sum(q.lag for q in queues)
                    labels = {"cluster": cluster, "broker": broker_name, "topic": topic, "group": group}
                    c.add("rocketmq_consumer_offset", sum(q.consumer_offset for q in queues), **labels)
                    served.add((group, topic, broker_name))
                    if addr in c.down:
                        continue
                    try:
                        await _group_rates(c, addr, labels)
                        if _broadcasting(online[group]):  # as its lag, its latency is its clients' to know
                            continue
                        latency = await _store_time_latency(consumer, queues)
                    except _READ_ERRORS as exc:
                        c.failed(addr, exc)
                        continue
                    c.add("rocketmq_group_get_latency_by_storetime", latency, **labels)
    for group in sorted(set(consuming) - set(online)):
        online[group] = await _online_consumers(c, brokers, group)
    for (group, topic), diff in sorted(diffs.items()):
        connected = online[group]
        if _broadcasting(connected):  # its offsets are its clients': what the brokers hold is no lag
            continue
        name = ("rocketmq_group_retrydiff" if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else
                "rocketmq_group_dlqdiff" if topic.startswith(DLQ_GROUP_TOPIC_PREFIX) else "rocketmq_group_diff")
        c.add(name, diff, group=group, topic=topic,
              countOfOnlineConsumers=str(0 if connected is None else len(connected.connections)), msgModel=_CLUSTERING)
    # an online broadcasting group has no offsets on the brokers, so their consume stats do not list it;
    # rocketmq-exporter asks each topic's consume stats of it, which read 0 on every queue: the group's
    # offset is 0 on each broker of each topic it consumes, and its rates are served as any group's.  No
    # offset of a topic it no longer subscribes to (listed as consuming it for old offsets the brokers
    # hold): the brokers' consume stats of an online group leave such a topic out, so the exporter has none
    for group, topics in sorted(consuming.items()):
        connected = online.get(group)
        if connected is None or not _broadcasting(connected):
            continue
        for topic, holders in sorted(topics.items()):
            for broker_name in holders:
                cluster, addr = brokers[broker_name]
                if (group, topic, broker_name) in served or addr in c.down:
                    continue
                labels = {"cluster": cluster, "broker": broker_name, "topic": topic, "group": group}
                if topic in connected.subscriptions:
                    c.add("rocketmq_consumer_offset", 0, **labels)
                try:
                    await _group_rates(c, addr, labels)
                except _READ_ERRORS as exc:
                    c.failed(addr, exc)
    for group, connected in sorted(online.items()):
        clients = [] if connected is None else connected.connections
        c.add("rocketmq_group_count", len(clients), caddr=",".join(x.client_addr for x in clients),
              localaddr=",".join(x.client_id for x in clients), group=group)
    asked = [(group, connected.broker_addr, client) for group, connected in sorted(online.items())
             if connected is not None and connected.broker_addr not in c.down
             for client in connected.connections]
    # every client at once: a client that does not answer holds the collection up for one relay timeout,
    # not one per client
    answers = await asyncio.gather(*(c.admin.consumer_running_info(group, client.client_id, broker_addr=addr)
                                     for group, addr, client in asked), return_exceptions=True)
    for (group, _, client), answer in zip(asked, answers):
        if isinstance(answer, BaseException):
            if not isinstance(answer, _READ_ERRORS):
                raise answer
            log.warning("exporter: client %s of group %s could not be read: %s", client.client_id, group, answer)
            c.errors += 1
            continue
        for topic, status in sorted(answer.status_table.items()):
            labels = {"clientAddr": client.client_addr, "clientId": client.client_id, "group": group,
                      "topic": topic}
            c.add("rocketmq_client_consume_fail_msg_count", status.consume_failed_msgs, **labels)
            c.add("rocketmq_client_consume_fail_msg_tps", status.consume_failed_tps, **labels)
            c.add("rocketmq_client_consume_ok_msg_tps", status.consume_ok_tps, **labels)
            c.add("rocketmq_client_consume_rt", status.consume_rt, **labels)
            c.add("rocketmq_client_consumer_pull_rt", status.pull_rt, **labels)
            c.add("rocketmq_client_consumer_pull_tps", status.pull_tps, **labels)


async def _group_rates(c: _Collection, addr: str, labels: dict[str, str]) -> None:
    """The group's pull rates and sent-back count of the topic on the broker at *addr* (*labels* name
    them).  Its rates of its %RETRY% topic are not served (rocketmq-exporter reads them of the topics it
    lists producer rates for)."""
    topic = labels["topic"]
    if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
        return
    key = f"{topic}@{labels['group']}"
    c.add_known("rocketmq_consumer_tps", await c.rate(addr, "GROUP_GET_NUMS", key), **labels)
    c.add_known("rocketmq_consumer_message_size", await c.rate(addr, "GROUP_GET_SIZE", key), **labels)
    # rocketmq-exporter serves this one's minute sum, not its rate
    c.add_known("rocketmq_send_back_nums", await c.minute_sum(addr, "SNDBCK_PUT_NUMS", key), **labels)


def _broadcasting(connected: ConsumerConnectionInfo | None) -> bool:
    """Whether the group's online clients consume by broadcasting (as their heartbeats say)."""
    return connected is not None and connected.message_model == "BROADCASTING"


async def _store_time_latency(consumer: PullConsumer, queues: Iterable[QueueProgress]) -> int:
    """The exporter's latency by store time: of the queues with messages not consumed, the most ms since
    the first such message was stored (a committed offset before the queue's first kept message reads
    from that message); 0 when the group has caught up everywhere."""
    now_ms = int(time.time() * 1000)
    worst = 0
    for q in queues:
        if q.lag <= 0:
            continue
        result = await consumer.pull(MessageQueue(q.topic, q.broker_name, q.queue_id), q.consumer_offset, 1)
        if not result.messages and result.min_offset > q.consumer_offset:
            result = await consumer.pull(MessageQueue(q.topic, q.broker_name, q.queue_id), result.min_offset, 1)
        if result.messages:
            worst = max(worst, now_ms - result.messages[0].store_timestamp)
    return worst


async def _online_consumers(c: _Collection, brokers: dict[str, tuple[str, str]],
                            group: str) -> ConsumerConnectionInfo | None:
    """The group's clients as the first master that sees any sees them (mqadmin consumerConnection's
    order: the masters of its %RETRY% topic first), masters that did not answer left out; None when
    none sees any (the exporter counts 0 too)."""
    try:
        addrs = list((await c.admin.topic_masters(RETRY_GROUP_TOPIC_PREFIX + group)).values())
    except _READ_ERRORS:
        addrs = []  # no retry topic (a broadcasting group, or one that never consumed): every master
    addrs.extend(addr for _, addr in brokers.values() if addr not in addrs)
    for addr in addrs:
        if addr in c.down:
            continue
        try:
            connected = await c.admin.consumer_connection_on(addr, group)
        except _READ_ERRORS as exc:
            if _unreachable(exc):
                c.errors += 1
                c.down.add(addr)
            continue
        if connected is not None:
            return connected
    return None


def _unreachable(exc: BaseException) -> bool:
    """Whether *exc* says the broker could not be reached (no connection, no answer in time), rather than
    that it answered: with an error code, or with a body that could not be read (a ProtocolError such as
    a JSON one; a frame that cannot be read closes the connection, which is a ConnectionClosedError)."""
    return isinstance(exc, (OSError, TimeoutError)) or (isinstance(exc, RemotingError)
                                                         and not isinstance(exc, ProtocolError))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(samples: Iterable[Sample]) -> str:
    """Prometheus's text exposition format (0.0.4): each metric's HELP and TYPE once, then its samples."""
    by_name: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_name[s.name].append(s)
    lines: list[str] = []
    for name in sorted(by_name):
        kind, help_text = METRICS.get(name, ("gauge", name))
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for s in by_name[name]:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels)
            lines.append(f"{name}{{{labels}}} {_number(s.value)}" if labels else f"{name} {_number(s.value)}")
    return "\n".join(lines) + "\n"


class MetricsServer:
    """Serves ``GET /metrics`` (and HEAD) on *host*:*port* from :func:`collect` over *admin*.

    Scrapes within ``min_interval_s`` of the last collection get its text again, and concurrent scrapes
    share one collection, so a busy Prometheus (or several) cannot multiply the load on the brokers.  A
    collection that fails as a whole (no name server answers) is a 503 with the reason."""

    def __init__(self, admin: AdminClient, *, host: str = "0.0.0.0", port: int = 5557, cluster: str | None = None,
                 min_interval_s: float = 5.0) -> None:
        self.admin = admin
        self.host = host
        self.port = port
        self.cluster = cluster
        self.min_interval_s = min_interval_s
        self._server: asyncio.base_events.Server | None = None
        #: the scrapers' connections being served (their tasks), closed by close()
        self._serving: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._closing = False
        self._lock = asyncio.Lock()
        self._text: str | None = None
        self._at = 0.0

    async def start(self) -> None:
        dual = dual_stack_listener(self.host, self.port)  # "::": IPv4 scrapers too
        self._closing = False
        if dual is None:
            self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=16384)
        else:
            self._server = await asyncio.start_server(self._serve, sock=dual, limit=16384)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._closing = True
            self._server.close()
            # the open connections go too (an idle scraper's, one waiting for a collection): on Python 3.12+
            # wait_closed waits for every one of them, and on 3.11 they stayed open until their own timeout
            for task, writer in list(self._serving.items()):
                writer.transport.abort()
                task.cancel()
            await asyncio.gather(*self._serving, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def metrics_text(self) -> str:
        async with self._lock:
            if self._text is None or time.monotonic() - self._at >= self.min_interval_s:
                self._text = render(await collect(self.admin, cluster=self.cluster))
                self._at = time.monotonic()
            return self._text

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:  # accepted as close() began
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        self._serving[task] = writer
        try:
            try:
                async with asyncio.timeout(10):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            method, path = _request_line(head)
            if method not in ("GET", "HEAD"):
                await _respond(writer, 405, "method not allowed\n", method, extra="Allow: GET, HEAD\r\n")
            elif path.split("?", 1)[0] == "/metrics":
                try:
                    text = await self.metrics_text()
                except (RocketStoreError, OSError, TimeoutError) as exc:
                    await _respond(writer, 503, f"the cluster could not be read: {exc}\n", method)
                else:
                    await _respond(writer, 200, text, method, content_type="text/plain; version=0.0.4; charset=utf-8")
            elif path == "/":
                await _respond(writer, 200, "rocketstore exporter: metrics at /metrics\n", method)
            else:
                await _respond(writer, 404, "not found: metrics are at /metrics\n", method)
        except asyncio.CancelledError:
            if not self._closing:
                raise
            # close() ended it: return (3.11 and 3.12's stream server logs a handler that ends cancelled)
        finally:
            del self._serving[task]
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass


def _request_line(head: bytes) -> tuple[str, str]:
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    return (parts[0], parts[1]) if len(parts) >= 2 else ("", "")


async def _respond(writer: asyncio.StreamWriter, status: int, text: str, method: str, *,
                   content_type: str = "text/plain; charset=utf-8", extra: str = "") -> None:
    reasons = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}
    body = text.encode("utf-8")
    head = (f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n").encode("latin-1")
    writer.write(head if method == "HEAD" else head + body)
    try:
        await writer.drain()
    except ConnectionError:
        pass
