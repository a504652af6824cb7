"""StoreConfig: frozen, picklable, RocketMQ's defaults, and RocketMQ's property names where users write them.

A store reopens from ``(path, config)``; that pair is what a Spark executor receives.  ``from_properties``
accepts the camelCase names of a broker.conf (``mappedFileSizeCommitLog``, ``flushDiskType``, ...) and
ignores names that belong to other parts of the broker, reporting unknown-but-plausible ones to the caller.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rocketstore.errors import StoreConfigError
from rocketstore.message.java_numbers import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    parse_java_int,
    parse_java_long,
)
from rocketstore.message.java_properties import read_properties_file

__all__ = ["BrokerRole", "FlushDiskType", "StoreConfig", "parse_delay_levels", "property_field", "read_properties_file"]


class FlushDiskType:
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole:
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


@dataclass(frozen=True, slots=True)
class StoreConfig:
    store_path_root_dir: str = os.path.join(os.path.expanduser("~"), "store")
    #: None means ``<store_path_root_dir>/commitlog`` (RocketMQ needs both set; we derive the usual one).
    store_path_commit_log: str | None = None
    mapped_file_size_commit_log: int = 1073741824
    mapped_file_size_consume_queue: int = 300000 * 20
    max_hash_slot_num: int = 5000000
    max_index_num: int = 20000000
    max_message_size: int = 4194304
    flush_disk_type: str = FlushDiskType.ASYNC_FLUSH
    broker_role: str = BrokerRole.ASYNC_MASTER
    flush_interval_commit_log_ms: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval_ms: int = 10000
    flush_commit_log_timed: bool = True
    flush_interval_consume_queue_ms: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval_ms: int = 60000
    sync_flush_timeout_ms: int = 5000
    #: SYNC_MASTER: how long a send waits for a slave to have its record (slaveTimeout)
    slave_timeout_ms: int = 3000
    check_crc_on_recover: bool = True
    message_index_enable: bool = True
    message_index_safe: bool = False
    max_transfer_bytes_on_message_in_memory: int = 262144
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 65536
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    max_msgs_num_batch: int = 64
    default_query_max_num: int = 32
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    #: how often the broker writes config/delayOffset.json (read once, at start, as 4.9.3 does)
    flush_delay_offset_interval_ms: int = 10_000
    file_reserved_time_h: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    clean_file_forcibly_enable: bool = True
    clean_resource_interval_ms: int = 10000
    warm_mapped_file_enable: bool = False
    #: rocketstore's own (broker.conf ``warmAheadBytes``): a background thread keeps this many bytes past the
    #: commitlog's write position in the page cache, so puts do not fault fresh pages in (0: off; unused
    #: with warmMapedFileEnable, which warms whole segments).  See page_warmer.py.
    warm_ahead_bytes: int = 32 << 20
    os_page_cache_busy_timeout_ms: int = 1000
    #: brokerIP1:listenPort, written as STOREHOST into every record and into offset message ids.
    store_host: str = "127.0.0.1:10911"
    #: Prepare the next commitlog segment in the background (RocketMQ's AllocateMappedFileService).
    preallocate_commit_log: bool = True

    # --- derived ------------------------------------------------------------------------------------

    @property
    def commit_log_dir(self) -> str:
        if self.store_path_commit_log:
            return self.store_path_commit_log
        return os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "config")

    @property
    def consume_queue_file_bytes(self) -> int:
        """RocketMQ rounds the consume-queue segment size up to whole 20-byte entries."""
        size = self.mapped_file_size_consume_queue
        return (size + 19) // 20 * 20

    @property
    def index_file_bytes(self) -> int:
        return 40 + self.max_hash_slot_num * 4 + self.max_index_num * 20

    @property
    def effective_disk_max_used_space_ratio(self) -> int:
        return min(95, max(10, self.disk_max_used_space_ratio))

    @property
    def is_sync_flush(self) -> bool:
        return self.flush_disk_type == FlushDiskType.SYNC_FLUSH

    def delay_levels_ms(self) -> dict[int, int]:
        return parse_delay_levels(self.message_delay_level)

    def replace(self, **changes: object) -> StoreConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        # the types first: a float size opened a store whose every put failed, a "false" string was true
        for f in _TYPED_FIELDS:
            value = getattr(self, f.name)
            default = f.default
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise StoreConfigError(f"{f.name} must be True or False, not {value!r}")
            elif isinstance(default, int):
                if not isinstance(value, int):
                    raise StoreConfigError(f"{f.name} must be an int, not {value!r}")
            elif not isinstance(value, str):
                raise StoreConfigError(f"{f.name} must be a str, not {value!r}")
        if self.mapped_file_size_commit_log < 4096:
            raise StoreConfigError("mappedFileSizeCommitLog must be at least 4096 bytes")
        if self.max_message_size < 1:
            # (every put was then MESSAGE_ILLEGAL: a store that can hold nothing)
            raise StoreConfigError("maxMessageSize must be at least 1 byte")
        if self.warm_ahead_bytes < 0:
            raise StoreConfigError("warmAheadBytes must be 0 (off) or more")
        if self.mapped_file_size_consume_queue < 20:
            raise StoreConfigError("mappedFileSizeConsumeQueue must hold at least one entry")
        if self.max_hash_slot_num < 1 or self.max_index_num < 2:
            raise StoreConfigError("maxHashSlotNum must be >= 1 and maxIndexNum >= 2")
        if self.flush_disk_type not in (FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH):
            raise StoreConfigError(f"flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not {self.flush_disk_type!r}")
        if self.broker_role not in (BrokerRole.ASYNC_MASTER, BrokerRole.SYNC_MASTER, BrokerRole.SLAVE):
            raise StoreConfigError(f"unknown brokerRole {self.broker_role!r}")
        parse_delay_levels(self.message_delay_level)

    # --- RocketMQ property names ------------------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **overrides: object) -> StoreConfig:
        """Build from broker.conf-style ``camelCase`` names; names for other broker parts are ignored, and so
        are names that only look like a field's (MaxMessageSize, max_message_size: 4.9.3 ignores them).  Every
        bad value is named in the one StoreConfigError raised."""
        values: dict[str, object] = {}
        fields = {f.name: f for f in dataclasses.fields(cls)}
        errors: list[str] = []
        for name, raw in props.items():
            attr = property_field(name, _PROPERTY_ALIASES)
            if attr not in fields:
                continue
            default = fields[attr].default
            try:
                values[attr] = _coerce(name, raw, default)
            except StoreConfigError as exc:
                errors.append(str(exc))
        if "brokerIP1" in props or "listenPort" in props:
            ip = props.get("brokerIP1", "127.0.0.1").strip()
            if ip.startswith("[") and ip.endswith("]"):  # a bracketed IPv6 literal, which Java's InetAddress takes
                ip = ip[1:-1]
            port = props.get("listenPort", "10911").strip()
            values.setdefault("store_host", f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
        values.update(overrides)
        try:
            config = cls(**values)  # type: ignore[arg-type]
        except StoreConfigError as exc:
            errors.extend(_refusals(cls, values) or [str(exc)])
        else:
            if not errors:
                return config
        raise StoreConfigError("; ".join(dict.fromkeys(errors)))


def _refusals(cls: type[StoreConfig], values: Mapping[str, object]) -> list[str]:
    """The errors of the values of *values* that are bad as given, when a config of all of them fails:
    __post_init__ names only the first.  Each value is taken into a config made of the values taken so far
    (the others at their defaults) if that config holds; a value refused against a default may hold with a
    value given after it, so the refused ones are tried again until no more is taken.  What is then still
    refused is bad with the values that hold (not against a default they replace), each named by the error
    it meets with them: one bad alone, or one of two values bad only together."""
    held: dict[str, object] = {}
    pending = dict(values)
    while True:
        refused: dict[str, str] = {}
        for attr, value in pending.items():
            try:
                cls(**{**held, attr: value})  # type: ignore[arg-type]
            except StoreConfigError as exc:
                refused[attr] = str(exc)
            else:
                held[attr] = value
        if len(refused) == len(pending):
            return list(refused.values())
        pending = {attr: values[attr] for attr in refused}


#: the fields __post_init__ checks the type of: every one with a bool, int or str default (not the paths,
#: which may be PathLike, or None for the commitlog's)
_TYPED_FIELDS = tuple(f for f in dataclasses.fields(StoreConfig)
                      if isinstance(f.default, (bool, int, str)) and not f.name.startswith("store_path"))

_PROPERTY_ALIASES = {
    "fileReservedTime": "file_reserved_time_h",
    "flushIntervalCommitLog": "flush_interval_commit_log_ms",
    "flushCommitLogThoroughInterval": "flush_commit_log_thorough_interval_ms",
    "flushIntervalConsumeQueue": "flush_interval_consume_queue_ms",
    "flushDelayOffsetInterval": "flush_delay_offset_interval_ms",
    "flushConsumeQueueThoroughInterval": "flush_consume_queue_thorough_interval_ms",
    "syncFlushTimeout": "sync_flush_timeout_ms",
    "slaveTimeout": "slave_timeout_ms",
    "osPageCacheBusyTimeOutMills": "os_page_cache_busy_timeout_ms",
    "cleanResourceInterval": "clean_resource_interval_ms",
    "warmMapedFileEnable": "warm_mapped_file_enable",
    "checkCRCOnRecover": "check_crc_on_recover",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _camel(attr: str) -> str:
    first, *rest = attr.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def property_field(name: str, aliases: Mapping[str, str]) -> str | None:
    """The config field a broker.conf property *name* sets, as 4.9.3 matches names: its alias's field, else
    the snake_case field whose camelCase form is *name* exactly (a field known by an alias only by that:
    fileReservedTime, not fileReservedTimeH); None for any other spelling (MaxMessageSize, max_message_size),
    which 4.9.3 ignores.  The caller checks the field exists (the broker's and the store's share the file)."""
    attr = aliases.get(name)
    if attr is not None:
        return attr
    attr = _snake(name)
    return attr if name == _camel(attr) and attr not in aliases.values() else None


#: the store properties whose 4.9.3 MessageStoreConfig field is a long (the other integers are Java ints)
JAVA_LONG_PROPERTIES = frozenset({"flushDelayOffsetInterval", "osPageCacheBusyTimeOutMills"})
#: ... and rocketstore's own long ones
_LONG_PROPERTIES = JAVA_LONG_PROPERTIES | {"warmAheadBytes"}


def _coerce(name: str, raw: str, default: object) -> object:
    text = str(raw).strip()
    if isinstance(default, bool):
        return text.lower() == "true"
    if isinstance(default, int):
        # as 4.9.3's Integer.parseInt / Long.parseLong read it (int() also took 1_024 and numbers past the
        # Java field's range, which 4.9.3 ignores: mappedFileSizeCommitLog=99999999999 made 93 GiB segments)
        return java_integer(name, raw, text, long=name in _LONG_PROPERTIES)
    return text


def java_integer(name: str, raw: str, text: str, *, long: bool) -> int:
    """*text* (the stripped *raw*) as a Java int, or long; StoreConfigError naming the property otherwise."""
    try:
        return parse_java_long(text) if long else parse_java_int(text)
    except ValueError as exc:
        limits = f"{LONG_MIN} .. {LONG_MAX}" if long else f"{INT_MIN} .. {INT_MAX}"
        raise StoreConfigError(f"{name}={raw!r} is not an integer (a Java {'long' if long else 'int'}: "
                               f"{limits})") from exc


_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> dict[int, int]:
    """``"1s 5s 10s ..."`` -> {1: 1000, 2: 5000, ...} (levels count from 1).

    The number is read as 4.9.3's parseDelayLevel does (Long.parseLong: a sign, any Unicode decimal digits);
    a delay past a Java long in ms, which 4.9.3 lets wrap round, is refused (StoreConfigError) here.  Items
    may be apart by any blanks (4.9.3 splits on single spaces and refuses to start otherwise)."""
    levels: dict[int, int] = {}
    for i, item in enumerate(text.split(), start=1):
        unit = item[-1:]
        try:
            number = parse_java_long(item[:-1])
        except ValueError:
            number = None
        if unit not in _UNIT_MS or number is None:
            raise StoreConfigError(f"messageDelayLevel item {item!r} is not <number><s|m|h|d>")
        if not LONG_MIN <= number * _UNIT_MS[unit] <= LONG_MAX:
            raise StoreConfigError(f"messageDelayLevel item {item!r} is past a Java long in milliseconds")
        levels[i] = number * _UNIT_MS[unit]
    if not levels:
        raise StoreConfigError("messageDelayLevel is empty")
    return levels
