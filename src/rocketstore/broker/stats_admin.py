"""Broker statistics and configuration at runtime: VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317)
and UPDATE_BROKER_CONFIG (25), plus what GET_BROKER_RUNTIME_INFO (28) and GET_BROKER_CONFIG (26) in
broker.admin answer (:func:`runtime_table`, :func:`reported_config_text`).

- VIEW_BROKER_STATS_DATA: one stat item's minute / hour / day windows as BrokerStatsData (what ``mqadmin
  statsAll`` and ``brokerConsumeStats`` read); an item that does not exist gets SYSTEM_ERROR
  ``The stats <name> <key> not exist``, 4.9.3's words.
- GET_BROKER_CONSUME_STATS: as 4.9.3's fetchAllConsumeStatsInBroker, for every subscription group, one
  ConsumeStats per topic it has offsets for (every write queue; topics the group, online with other
  subscriptions, does not subscribe to are left out; with ``isOrder`` only ordered topics), in a
  ConsumeStatsList with the broker address and the summed lag.
- UPDATE_BROKER_CONFIG: the body is Java properties text, taken as 4.9.3's Configuration.update takes it.
  A key may be a property of BrokerConfig or StoreConfig (the broker.conf names: camelCase, with RocketMQ's
  own spellings such as brokerIP1 or flushIntervalCommitLog), a 4.9.3 property this broker keeps without
  acting on it (broker.config_keys: deleteCommitLogFilesInterval, enableCalcFilterBitMap, the thread pool
  sizes, ...) or a key of the file the broker was started with that no setting here takes (4.9.3 keeps
  those too).  A value converts as 4.9.3's setter converts it (java_value: a boolean is true or false, an
  int or long is digits in range, an enum is one of its names).  What converts not, and keys that are none
  of the above, are left as they were, as 4.9.3 leaves them; the answer is still SUCCESS, its remark naming
  them.  A value that converts but that the config refuses (brokerId -1, listenPort 70000, an empty
  brokerName, a messageDelayLevel that does not parse, mappedFileSizeCommitLog under 4096, ...: 4.9.3 takes
  them, and then cannot start again from the file it wrote) changes nothing and answers SYSTEM_ERROR.
  The new values replace the broker's config objects, the configuration's data version goes up, and every
  property (the ones kept without effect too) is written to the broker.conf the broker was started with
  (``-c``: ``Broker(config_path=...)``), as 4.9.3 does, its previous text kept as ``.bak``; a broker started
  without one writes ``<storePathRootDir>/config/broker.properties`` (4.9.3:
  ``~/store/config/broker.properties``).  A brokerPermission change also raises the topic config version and
  registers with the name servers at once, as 4.9.3 does.  An empty body changes nothing (4.9.3 neither).
  A file that cannot be written (a full disk) is logged and the answer is SUCCESS, the change in effect, as
  4.9.3's Configuration.persist logs an IOException; the file is tried again every
  flushConsumerOffsetInterval until it is written (4.9.3 writes it again only at the next update).

  What acts at once: values the request handlers read per request (brokerPermission,
  autoCreateTopicEnable, longPollingEnable, shortPollingTimeMills, slaveReadEnable,
  rejectTransactionMessage, regionId, traceOn, notifyConsumerIdsChangedEnable, enablePropertyFilter and
  the like), the retention settings the store's next clean-up pass uses (fileReservedTime, deleteWhen,
  diskMaxUsedSpaceRatio, cleanFileForciblyEnable: 4.9.3 reads them at every pass) and the read limits the
  store's next get uses (accessMessageInMemoryMaxRatio, which decides the suggest-slave flag of pulls and
  QUERY_CONSUMER_OFFSET's start of a new group, and the maxTransfer{Bytes,Count}OnMessageIn{Memory,Disk}
  batch limits: 4.9.3's getMessage reads them at every call), the flush settings the store's flush thread
  takes at its next round (flushIntervalCommitLog, flushCommitLogLeastPages, flushCommitLogThoroughInterval
  and the consume queues' three: 4.9.3 reads them at every round; a shorter interval acts at once, not after
  the old one), osPageCacheBusyTimeOutMills and syncFlushTimeout (every put; a send already waiting for its
  flush keeps the timeout it had), maxMsgsNumBatch and defaultQueryMaxNum (every
  QUERY_MESSAGE), autoCreateSubscriptionGroup (every lookup of a group), transactionCheckInterval (the
  check service's wait starts again with it) and replication's haSlaveFallbehindMax (every SYNC_MASTER
  send), haTransferBatchSize, haSendHeartbeatInterval and haHousekeepingInterval (every chunk, heartbeat
  and read of a slave connection).  brokerRole acts at once
  where 4.9.3 reads it per request or per put: a SLAVE's store refuses puts (a send answers
  SERVICE_NOT_AVAILABLE), a master's takes them, a SYNC_MASTER's send waits for its slave (SLAVE_NOT_AVAILABLE
  on a broker started as a slave, which has no HA port), pulls and END_TRANSACTION see the new role; what
  starts with the broker (HA port or HA client, slave sync, delayed delivery, transaction checks) stays as
  it started, as in 4.9.3, whose changeToSlave / changeToMaster only DLedger calls.  Everything else the
  broker or the store reads once when it starts (ports, names, addresses, store paths and sizes,
  flushDiskType, cleanResourceInterval, ACL, maxMessageSize) is recorded, shown by
  GET_BROKER_CONFIG and written to the file, and takes effect at the next start from that file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from rocketstore.broker import config as broker_config_module
from rocketstore.broker import config_keys, filter_data
from rocketstore.broker.broker_stats import StatsItem
from rocketstore.broker.config_files import BackgroundWriter, write_text_atomically
from rocketstore.errors import StoreConfigError, StoreError
from rocketstore.message.java_properties import format_properties, parse_properties_text
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import MQ_VERSION, RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import GetConsumeStatsInBrokerHeader, ViewBrokerStatsDataRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.tls import client_context_default
from rocketstore.remoting.transport import Connection
from rocketstore.remoting.versions import get_version_desc
from rocketstore.store import config as store_config_module
from rocketstore.store.config import BrokerRole
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.store_stats import java_double

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["ConfigUpdate", "ConfigUpdateError", "config_text", "queue_offsets", "register", "reported_config_text",
           "runtime_table", "start_file_extras", "subscribed_elsewhere", "updated_configs"]

log = logging.getLogger(__name__)

#: the retention settings an UPDATE_BROKER_CONFIG hands to the running store (its next clean-up pass uses them)
_RETENTION_PROPERTIES = frozenset({"fileReservedTime", "deleteWhen", "diskMaxUsedSpaceRatio", "cleanFileForciblyEnable"})
#: the read limits an UPDATE_BROKER_CONFIG hands to the running store (its next get uses them)
_READ_LIMIT_PROPERTIES = frozenset({
    "accessMessageInMemoryMaxRatio", "maxTransferBytesOnMessageInMemory", "maxTransferCountOnMessageInMemory",
    "maxTransferBytesOnMessageInDisk", "maxTransferCountOnMessageInDisk"})
#: the store settings 4.9.3 reads at every use (each flush round, put, query) that an UPDATE_BROKER_CONFIG
#: hands to the running store
_PER_USE_STORE_PROPERTIES = frozenset({
    "flushIntervalCommitLog", "flushCommitLogLeastPages", "flushCommitLogThoroughInterval",
    "flushIntervalConsumeQueue", "flushConsumeQueueLeastPages", "flushConsumeQueueThoroughInterval",
    "osPageCacheBusyTimeOutMills", "syncFlushTimeout", "maxMsgsNumBatch", "defaultQueryMaxNum"})
#: all of them (MessageStore.update_run_time_settings takes the three kinds at once)
_STORE_RUN_TIME_PROPERTIES = _RETENTION_PROPERTIES | _READ_LIMIT_PROPERTIES | _PER_USE_STORE_PROPERTIES
#: the file UPDATE_BROKER_CONFIG writes under the store's config directory (4.9.3's default brokerConfigPath)
BROKER_PROPERTIES_FILE = "broker.properties"


# --- runtime info ------------------------------------------------------------------------------------------


def human_bytes(count: int) -> str:
    """4.9.3's MixAll.humanReadableByteCount(count, false): ``512 B``, ``1.5 KiB``, ``12.0 GiB``."""
    if count < 1024:
        return f"{count} B"
    exponent = 0
    value = float(count)
    while value >= 1024 and exponent < 6:
        value /= 1024
        exponent += 1
    # Java's %.1f rounds the shortest decimal form of the double half up (1.25 -> 1.3; Python's rounds to even)
    rounded = Decimal(repr(value)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{rounded} {'KMGTPE'[exponent - 1]}iB"


def disk_used_ratio(path: str) -> float:
    """Used share of *path*'s partition, rounded up to whole percent, as a fraction (0.46); -1 when the
    path does not exist (4.9.3's getDiskPartitionSpaceUsedPercent)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    used = total - st.f_bfree * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return -1.0
    percent = used * 100 // entire + (1 if used * 100 % entire else 0)
    return percent / 100.0


def runtime_table(broker: Broker) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO's table: 4.9.3's keys and value formats (store statistics, disk ratios,
    delay offsets, message totals, queue figures), plus pullHoldCount (pulls held by long polling)."""
    store = broker.store
    stats = broker.stats
    now_ms = int(time.time() * 1000)
    table = stats.store.runtime_info(now_ms)
    kept = {**config_keys.kept_defaults(use_tls=False), **broker.extra_properties}
    commit_log_dir = broker.store_config.commit_log_dir
    ratio = disk_used_ratio(commit_log_dir)
    table[f"commitLogDiskRatio_{commit_log_dir}"] = java_double(ratio)
    table["commitLogDiskRatio"] = java_double(ratio)
    table["consumeQueueDiskRatio"] = java_double(disk_used_ratio(broker.store_config.consume_queue_dir))
    if broker.schedule is not None:
        for level, offset in broker.schedule.offset_table_json().items():
            table[f"scheduleMessageOffset_{level}"] = f"{offset},{store.max_offset(SCHEDULE_TOPIC, level - 1)}"
    table["commitLogMinOffset"] = str(store.min_commit_log_offset)
    table["commitLogMaxOffset"] = str(store.max_commit_log_offset)
    table.update({
        "brokerVersionDesc": get_version_desc(MQ_VERSION),
        "brokerVersion": str(MQ_VERSION),
        "msgPutTotalYesterdayMorning": str(stats.put_total_yesterday_morning),
        "msgPutTotalTodayMorning": str(stats.put_total_today_morning),
        "msgPutTotalTodayNow": str(stats.store.put_message_count),
        "msgGetTotalYesterdayMorning": str(stats.get_total_yesterday_morning),
        "msgGetTotalTodayMorning": str(stats.get_total_today_morning),
        "msgGetTotalTodayNow": str(stats.store.get_transferred_count),
        "sendThreadPoolQueueSize": "0",
        "sendThreadPoolQueueCapacity": kept["sendThreadPoolQueueCapacity"],
        "pullThreadPoolQueueSize": "0",
        "pullThreadPoolQueueCapacity": kept["pullThreadPoolQueueCapacity"],
        "queryThreadPoolQueueSize": "0",
        "queryThreadPoolQueueCapacity": kept["queryThreadPoolQueueCapacity"],
        "EndTransactionQueueSize": "0",
        # 4.9.3 reports BrokerConfig's endTransactionPoolQueueCapacity under this name
        "EndTransactionThreadPoolQueueCapacity": kept["endTransactionPoolQueueCapacity"],
        "dispatchBehindBytes": str(store.dispatch_behind_bytes),
        "pageCacheLockTimeMills": str(_page_cache_lock_ms(broker, now_ms)),
        "sendThreadPoolQueueHeadWaitTimeMills": "0",
        "pullThreadPoolQueueHeadWaitTimeMills": "0",
        "queryThreadPoolQueueHeadWaitTimeMills": "0",
        "earliestMessageTimeStamp": str(store.earliest_message_time()),
        "startAcceptSendRequestTimeStamp": kept["startAcceptSendRequestTimeStamp"],
        # no transient store pool here: 4.9.3 answers Integer.MAX_VALUE without one
        "remainTransientStoreBufferNumbs": str(2**31 - 1),
        "remainHowManyDataToFlush": human_bytes(_unflushed_bytes(broker)),
        "pullHoldCount": str(broker.pull_hold.waiting_count),
    })
    root = broker.store_config.store_path_root_dir
    if os.path.exists(root):
        try:
            usage = shutil.disk_usage(root)
        except OSError:
            pass
        else:
            table["commitLogDirCapacity"] = f"Total : {human_bytes(usage.total)}, Free : {human_bytes(usage.free)}."
    return table


def _page_cache_lock_ms(broker: Broker, now_ms: int) -> int:
    """How long the commitlog's append lock has been held (0 when free), 4.9.3's lockTimeMills."""
    begin = broker.store.append_lock_begin_ms
    return max(0, now_ms - begin) if begin else 0


def _unflushed_bytes(broker: Broker) -> int:
    """Commitlog bytes written but not yet flushed (4.9.3's remainHowManyDataToFlush)."""
    store = broker.store
    return max(0, store.max_commit_log_offset - store.flushed_commit_log_offset)


# --- configuration -----------------------------------------------------------------------------------------


def _property_names(cls: type, aliases: dict[str, str]) -> dict[str, str]:
    """broker.conf name -> field name of every field of *cls* (RocketMQ's spelling where it differs)."""
    own = {field: name for name, field in aliases.items()}
    names = {}
    for f in dataclasses.fields(cls):
        parts = f.name.split("_")
        names[own.get(f.name, parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]))] = f.name
    return names


_BROKER_NAMES = _property_names(broker_config_module.BrokerConfig, broker_config_module._ALIASES)
_STORE_NAMES = _property_names(store_config_module.StoreConfig, store_config_module._PROPERTY_ALIASES)


def _properties(obj: Any, names: dict[str, str]) -> Iterator[tuple[str, object]]:
    for name, field in names.items():
        value = getattr(obj, field)
        if value is not None:
            yield name, value


def _extra_lines(broker: Broker) -> list[tuple[str, object]]:
    """The properties kept without effect (4.9.3's defaults, overridden by the start file and by updates) and
    the other keys of the start file, in that order."""
    own = broker.client_ssl_context  # useTLS: how the broker's own connections are made
    own_tls = (client_context_default() if own == "process" else own) is not None
    values = config_keys.kept_defaults(use_tls=own_tls)
    values.update(broker.extra_properties)
    return list(values.items())


def config_text(broker: Broker, *, ha_port_in_use: bool = False) -> str:
    """Every set property of the broker and its store as ``name=value`` lines, broker.conf's names, then the
    4.9.3 properties kept without effect and the start file's other keys: what GET_BROKER_CONFIG answers and
    UPDATE_BROKER_CONFIG writes (4.9.3 answers and writes the same text: its Configuration's every
    property).  As 4.9.3 always has them, brokerIP2, haListenPort and storePathCommitLog are there when
    not set, with the values this broker uses (brokerIP2: the address it registers as haServerAddr's, the
    advertised one; haListenPort: BrokerConfig.ha_port(); storePathCommitLog: the store's commitlog
    directory).  With *ha_port_in_use*, haListenPort is the port the HA server listens on while the
    configuration still asks for the one it started with (the file says what was asked for, listenPort + 1
    or 0, so that the next start asks again and falls back again if need be)."""
    cfg, store_cfg = broker.config, broker.store_config
    ha_port = cfg.ha_port()
    if ha_port_in_use and broker.ha_server is not None and ha_port == broker.ha_port_asked:
        ha_port = broker.ha_server.port
    cfg = cfg.replace(broker_ip2=cfg.broker_ip2 or cfg.advertised_ip(), ha_listen_port=ha_port)
    store_cfg = store_cfg.replace(store_path_commit_log=store_cfg.commit_log_dir)
    return format_properties([*_properties(cfg, _BROKER_NAMES), *_properties(store_cfg, _STORE_NAMES),
                              *_extra_lines(broker)])


def reported_config_text(broker: Broker) -> str:
    """GET_BROKER_CONFIG's body: :func:`config_text` with the HA port in use.  mqadmin exportConfigs and
    exportMetrics read some of the kept ones (filterServerNums, useTLS: whether the broker's own connections
    go over TLS, ``tls.enable``; clientCallbackExecutorThreads, the CPU count, which exportMetrics takes as
    cpuNum)."""
    return config_text(broker, ha_port_in_use=True)


_BLOOM_PROPERTIES = frozenset({"maxErrorRateOfBloomFilter", "expectConsumerNumUseFilter",
                               "bitMapLengthConsumeQueueExt"})


def start_file_extras(props: dict[str, str]) -> dict[str, str]:
    """The keys of a start file (a broker.conf) that are no BrokerConfig or StoreConfig property, as the broker
    keeps them: a 4.9.3 property kept without effect with its value converted (left out, so its default
    shows, when it does not convert, as 4.9.3 does), any other key with its text (4.9.3's
    Configuration.registerConfig of the file's properties)."""
    extras: dict[str, str] = {}
    for name, raw in props.items():
        if name in _BROKER_NAMES or name in _STORE_NAMES:
            continue
        kept = config_keys.KEPT_PROPERTIES.get(name)
        value = config_keys.java_value(kept[0], raw) if kept is not None else raw
        if value is not None:
            extras[name] = value
    # 4.9.3's broker sets bitMapLengthConsumeQueueExt at start, over the file's, to the bit count of the
    # consumers' bloom filter its maxErrorRateOfBloomFilter and expectConsumerNumUseFilter make (the kept
    # default, 112, is that of theirs; a value the filter refuses stops 4.9.3's start; here the property
    # is then left as it was)
    if not _BLOOM_PROPERTIES.intersection(extras):
        return extras
    def setting(name: str) -> int:  # the start file's, else the kept default (both Java ints as text)
        return int(extras.get(name) or config_keys.KEPT_PROPERTIES[name][1] or 0)

    error_rate, expected = setting("maxErrorRateOfBloomFilter"), setting("expectConsumerNumUseFilter")
    if 1 <= error_rate < 100 and expected >= 1:
        extras["bitMapLengthConsumeQueueExt"] = str(filter_data.bloom_bit_count(error_rate, expected))
    return extras


def start_file_notice(props: dict[str, str]) -> str | None:
    """The warning the broker logs once at start about the keys of its start file that act on nothing here:
    4.9.3 properties it keeps without effect (thread pools, netty, DLedger, transientStorePoolEnable, ...:
    config_keys.KEPT_PROPERTIES but the few it reads), its own fields without effect, and keys that are no
    property at all (a misspelt name, say); None when every key acts.  4.9.3 says nothing of either; a user
    who sets a key expects it to act, or to be told."""
    kept, own, unknown = [], [], []
    for name in props:
        target = config_keys.SETTER_NAMES.get(name, name)
        if name in config_keys.FIELDS_WITHOUT_EFFECT:
            own.append(f"{name} ({config_keys.FIELDS_WITHOUT_EFFECT[name]})")
        elif name in _BROKER_NAMES or name in _STORE_NAMES:
            continue
        elif target in config_keys.KEPT_PROPERTIES:
            if target not in config_keys.KEPT_AND_READ:
                kept.append(name)
        else:
            unknown.append(name + _unknown_key_hint(name))
    parts = []
    if kept or own:
        parts.append("act on nothing in this broker (kept, shown by GET_BROKER_CONFIG and written back by "
                     "UPDATE_BROKER_CONFIG): " + ", ".join(sorted(kept) + own))
    if unknown:
        parts.append("are no broker property (kept as given): " + ", ".join(sorted(unknown)))
    return "keys of the broker's configuration that " + "; keys that ".join(parts) if parts else None


#: broker.conf keys many 4.x deployment guides set that 4.9.3 has no property for: it puts these files under
#: storePathRootDir, whatever the file says
_ROOT_DIR_PATHS = frozenset({"storePathConsumeQueue", "storePathConsumeQueueExt", "storePathIndex",
                             "storeCheckpoint", "abortFile"})


def _unknown_key_hint(name: str) -> str:
    """What the start warning adds to a key that is no property: where 4.9.3 puts a path it names, or the
    property it is probably a misspelling of (mapedFileSizeConsumeQueue, the old spelling 4.9.3 ignores)."""
    if name in _ROOT_DIR_PATHS:
        return " (always under storePathRootDir, as in 4.9.3)"
    known = {n.lower(): n for n in (*_BROKER_NAMES, *_STORE_NAMES, *config_keys.KEPT_PROPERTIES)}
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.85)
    return f" (did you mean {known[close[0]]}?)" if close else ""


class ConfigUpdateError(ValueError):
    """An UPDATE_BROKER_CONFIG body with a value the broker's config refuses (brokerId -1, an empty brokerName,
    a messageDelayLevel that does not parse, ...)."""


def _java_kind(name: str, current: object, type_text: str) -> str:
    """The kind of 4.9.3's setter of one of rocketstore's own properties."""
    if isinstance(current, bool) or type_text.startswith("bool"):
        return "bool"
    if isinstance(current, int) or type_text.startswith("int"):
        # rocketstore's own properties (busyPollMicros, ...) have no 4.9.3 setter: a long's range
        return "long" if name in config_keys.JAVA_LONGS or name in config_keys.ROCKETSTORE_ONLY else "int"
    return "str"


@dataclasses.dataclass(frozen=True)
class ConfigUpdate:
    """What an UPDATE_BROKER_CONFIG body changes: the new config objects and kept properties, and the keys
    left as they were (name -> why)."""

    broker_config: Any
    store_config: Any
    extra_properties: dict[str, str]
    ignored: dict[str, str]

    def remark(self) -> str | None:
        """SUCCESS's remark: the keys left as they were, else None (4.9.3 answers none)."""
        if not self.ignored:
            return None
        return "left as they were (as 4.9.3 leaves them): " + "; ".join(
            f"{name}: {why}" for name, why in self.ignored.items())


def updated_configs(broker: Broker, props: dict[str, str]) -> ConfigUpdate:
    """*props* applied to the broker's configuration as 4.9.3's Configuration.update applies them (see the
    module docstring); ConfigUpdateError, changing nothing, for a converted value the configs refuse."""
    broker_changes: dict[str, object] = {}
    store_changes: dict[str, object] = {}
    extras = dict(broker.extra_properties)
    ignored: dict[str, str] = {}
    for name, raw in props.items():
        target = config_keys.SETTER_NAMES.get(name, name)
        own = [(names[name], obj, changes) for names, obj, changes in
               ((_BROKER_NAMES, broker.config, broker_changes), (_STORE_NAMES, broker.store_config, store_changes))
               if name in names]
        if own:
            for field, obj, changes in own:
                current = getattr(obj, field)
                type_text = str({f.name: f for f in dataclasses.fields(obj)}[field].type)
                if name in config_keys.JAVA_ENUMS:
                    value: object = raw if raw in config_keys.JAVA_ENUMS[name] else None
                    why = f"{raw!r} is not one of {', '.join(sorted(config_keys.JAVA_ENUMS[name]))}"
                else:
                    kind = _java_kind(name, current, type_text)
                    text = config_keys.java_value(kind, raw)
                    value = text if kind == "str" or text is None else (text == "true" if kind == "bool" else int(text))
                    why = f"{raw!r} is not a Java {kind}"
                if value is None:
                    ignored[name] = why
                else:
                    changes[field] = value
        elif target in config_keys.KEPT_PROPERTIES:
            kind = config_keys.KEPT_PROPERTIES[target][0]
            text = config_keys.java_value(kind, raw)
            if text is None:
                ignored[name] = f"{raw!r} is not a Java {kind}"
            else:
                extras[target] = text
        elif name in extras:
            extras[name] = raw  # a key of the start file no setting takes: 4.9.3 keeps its new text
        else:
            ignored[name] = "not a broker property"
    try:
        new_broker = broker.config.replace(**broker_changes) if broker_changes else broker.config
        new_store = broker.store_config.replace(**store_changes) if store_changes else broker.store_config
    except (StoreConfigError, TypeError, ValueError) as exc:
        raise ConfigUpdateError(f"{exc} (nothing was changed)") from exc
    return ConfigUpdate(new_broker, new_store, extras, ignored)


# --- consume stats -----------------------------------------------------------------------------------------


def _mq(broker: Broker, topic: str, queue_id: int) -> dict[str, object]:
    return {"brokerName": broker.config.broker_name, "queueId": queue_id, "topic": topic}


def subscribed_elsewhere(broker: Broker, group: str, topic: str) -> bool:
    """The group is online with subscriptions, none to *topic*: consume stats leave the topic out."""
    info = broker.clients.group(group)
    return info is not None and bool(info.subscriptions) and topic not in info.subscriptions


def queue_offsets(broker: Broker, group: str, topic: str, queue_count: int
                  ) -> list[tuple[dict[str, object], dict[str, object]]]:
    """ConsumeStats' offsetTable entries of queues 0 .. *queue_count* - 1: (message queue, OffsetWrapper)."""
    store = broker.store
    pairs = []
    for q in range(queue_count):
        consumer_offset = max(0, broker.offsets.query(group, topic, q))
        entry: dict[str, object] = {"brokerOffset": max(0, store.max_offset(topic, q)),
                                    "consumerOffset": consumer_offset, "lastTimestamp": 0}
        if consumer_offset > 0:
            last = store.store_time(topic, q, consumer_offset - 1)
            if last > 0:
                entry["lastTimestamp"] = last
        pairs.append((_mq(broker, topic, q), entry))
    return pairs


def consume_stats_list(broker: Broker, is_order: bool) -> bytes:
    """The ConsumeStatsList body: fields in fastjson's (name) order, each ConsumeStats with its
    object-keyed offsetTable."""
    groups = []
    total_diff = 0
    topics_by_group = broker.offsets.topics_by_group()  # one pass, not one per group
    for group in list(broker.groups.table):
        stats = []
        for topic in topics_by_group.get(group, ()):
            tc = broker.topics.get(topic)
            if tc is None or (is_order and not tc.order) or subscribed_elsewhere(broker, group, topic):
                continue
            pairs = queue_offsets(broker, group, topic, tc.write_queue_nums)
            total_diff += sum(int(e["brokerOffset"]) - int(e["consumerOffset"])  # type: ignore[call-overload]
                              for _, e in pairs)
            tps = broker.stats.group_get_tps(group, topic)  # 4.9.3's tpsGroupGetNums
            stats.append(fastjson.dumps_object_keyed({"consumeTps": tps}, "offsetTable", pairs).decode())
        groups.append("{" + json.dumps(group, ensure_ascii=False) + ":[" + ",".join(stats) + "]}")
    text = (f'{{"brokerAddr":{json.dumps(broker.address)},"consumeStatsList":[{",".join(groups)}],'
            f'"totalDiff":{total_diff}}}')
    return text.encode("utf-8")


def _window(item: StatsItem) -> bytes:
    return fastjson.dumps({"statsDay": item.in_day().to_json(), "statsHour": item.in_hour().to_json(),
                           "statsMinute": item.in_minute().to_json()})


# --- handlers ----------------------------------------------------------------------------------------------


def register(router: RequestRouter, broker: Broker) -> None:
    update_lock = asyncio.Lock()
    #: UPDATE_BROKER_CONFIG's writes of the config file (made at the first update: the path needs the store)
    conf_writer: BackgroundWriter[tuple[str, str]] | None = None

    def config_file_writer() -> BackgroundWriter[tuple[str, str]]:
        nonlocal conf_writer
        if conf_writer is None:
            # the file the broker was started with, else the running store's config directory (a new
            # storePathRootDir is for the next start)
            path = broker.config_path or os.path.join(broker.store.config.config_dir, BROKER_PROPERTIES_FILE)
            conf_writer = BackgroundWriter(lambda: (path, config_text(broker)),
                                           lambda snapshot: write_text_atomically(*snapshot), path)
            # beyond 4.9.3 (whose Configuration.persist logs an IOException and writes the file again only at
            # the next update): the offsets timer writes it again while its last write failed, as topics.json
            broker.retried_writers.append(conf_writer)
        return conf_writer

    async def view_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = ViewBrokerStatsDataRequestHeader.from_ext_fields(request.ext_fields)
        item = broker.stats.item(h.stats_name, h.stats_key)
        if item is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"The stats <{h.stats_name}> <{h.stats_key}> not exist")
        return request.make_response(ResponseCode.SUCCESS, body=_window(item))

    async def broker_consume_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsInBrokerHeader.from_ext_fields(request.ext_fields)
        return request.make_response(ResponseCode.SUCCESS, body=consume_stats_list(broker, h.is_order))

    async def update_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        log.info("UPDATE_BROKER_CONFIG called by %s", conn.peer_address)
        if not request.body:
            return request.make_response(ResponseCode.SUCCESS)
        try:
            props = parse_properties_text(request.body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"the body is not UTF-8 text: {exc}")
        async with update_lock:
            try:
                update = updated_configs(broker, props)
            except ConfigUpdateError as exc:
                return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
            log.info("UPDATE_BROKER_CONFIG from %s: %s", conn.peer_address, props)
            if update.ignored:
                log.warning("UPDATE_BROKER_CONFIG from %s: %s", conn.peer_address, update.remark())
            new_broker, new_store = update.broker_config, update.store_config
            if new_store.broker_role != broker.store.config.broker_role:
                # 4.9.3's store and send path read brokerRole at every put: a SLAVE refuses puts, a
                # SYNC_MASTER waits for its slave; what starts with the broker does not follow (see above)
                try:
                    await broker.run_blocking(broker.store.set_broker_role, new_store.broker_role)
                except StoreError as exc:
                    return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
                broker.sync_master = new_store.broker_role == BrokerRole.SYNC_MASTER
            broker.config = new_broker
            broker.store_config = new_store
            broker.extra_properties = update.extra_properties
            if _STORE_RUN_TIME_PROPERTIES.intersection(props):
                # 4.9.3 reads them at every use: each clean-up pass, get, flush round, put or query
                broker.store.update_run_time_settings(new_store)
            if hasattr(broker, "topics"):
                broker.topics.config = new_broker  # auto-creation reads it per send
            if hasattr(broker, "groups"):  # 4.9.3's findSubscriptionGroupConfig reads it per call
                broker.groups.auto_create = new_broker.auto_create_subscription_group
            if "syncFlushTimeout" in props and hasattr(broker, "durable_waits"):
                # the sends that wait on the loop from now on (the store's own waits read it at every put)
                broker.durable_waits.set_timeout(new_store.sync_flush_timeout_ms / 1000)
            if "transactionCheckInterval" in props:
                broker.transactions.interval_changed()  # the next round comes after the new interval
            now_ms = int(time.time() * 1000)
            broker.config_version = broker.config_version.next(now_ms)
            if "brokerPermission" in props and hasattr(broker, "topics"):
                broker.topics.data_version = broker.topics.data_version.next(now_ms)
                broker.topics.writer.changed()  # the new version in topics.json, as every topic change
                broker.topic_created()  # register with the new permission now
            # written before the answer; a failed write (a full disk) is logged and answered SUCCESS, as
            # 4.9.3's Configuration.persist logs an IOException: the config has changed all the same
            writer = config_file_writer()
            writer.changed()
            try:
                await writer.flush()
            except OSError:
                pass  # logged by the writer (once per kind of failure), written again by the offsets timer
            if "brokerPermission" in props and hasattr(broker, "topics"):
                # topics.json: written again by the broker's offsets timer if this fails (BackgroundWriter.retry)
                await broker.topics.flush_quietly()
        return request.make_response(ResponseCode.SUCCESS, remark=update.remark())

    router.add(RequestCode.VIEW_BROKER_STATS_DATA, view_stats)
    router.add(RequestCode.GET_BROKER_CONSUME_STATS, broker_consume_stats)
    router.add(RequestCode.UPDATE_BROKER_CONFIG, update_config)
