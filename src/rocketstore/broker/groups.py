"""Subscription group configs (RocketMQ's SubscriptionGroupManager): config/subscriptionGroup.json.

File: ``{"dataVersion":{...},"subscriptionGroupTable":{"<group>":SubscriptionGroupConfig,...}}``.  Groups are
auto-created on first use when autoCreateSubscriptionGroup (default true).  A change is written off the loop
when one runs (config_files.BackgroundWriter; :meth:`SubscriptionGroupTable.flush` awaits it), else at once.
Not thread-safe: event loop.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from rocketstore.broker.config_files import VersionedTable

__all__ = ["SubscriptionGroupConfig", "SubscriptionGroupTable"]

#: MixAll.CID_RMQ_SYS_PREFIX: groups the broker itself uses, created whatever autoCreateSubscriptionGroup says
SYS_GROUP_PREFIX = "CID_RMQ_SYS_"

#: the groups 4.9.3's SubscriptionGroupManager starts with (CID_RMQ_SYS_TRACE came only with 5.x)
_SYSTEM_GROUPS = ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
                  "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER")


_WIRE = {"group_name": "groupName", "consume_enable": "consumeEnable",
         "consume_from_min_enable": "consumeFromMinEnable", "consume_broadcast_enable": "consumeBroadcastEnable",
         "retry_queue_nums": "retryQueueNums", "retry_max_times": "retryMaxTimes", "broker_id": "brokerId",
         "which_broker_when_consume_slowly": "whichBrokerWhenConsumeSlowly",
         "notify_consumer_ids_changed_enable": "notifyConsumerIdsChangedEnable"}


#: the number fields that are Java longs (the others are ints)
_LONG_FIELDS = frozenset({"broker_id", "which_broker_when_consume_slowly"})


#: what fastjson 1.2.48 reads as no value for a number field: the field keeps its default (checked against
#: 4.9.3's broker: ``{"retryMaxTimes": null}``, ``""``, ``"null"`` and ``"NULL"`` leave 16)
_NO_NUMBER = (None, "", "null", "NULL")


def _java_number(wire: str, raw: object, bits: int) -> int:
    """*raw* as the Java int (*bits* 32) or long (64) field *wire* (*bits* 0: any size); ValueError if it
    is none.  A string is read as fastjson's castToInt / castToLong reads it: its commas dropped unless
    it starts with one, then Integer.parseInt (a sign and digits; no blanks, no ``_``).  A JSON boolean is
    1 / 0 for an int field and refused for a long one (fastjson 1.2.48: "parseLong error")."""
    if isinstance(raw, str):
        if not raw.startswith(","):
            raw = raw.replace(",", "")
        if raw != raw.strip() or "_" in raw:
            raise ValueError(f"{wire} is not a number: {raw!r}")
    elif isinstance(raw, bool) and bits == 64:
        raise ValueError(f"{wire} is not a number: {raw!r}")
    try:
        value = int(raw)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{wire} is not a number: {raw!r}") from exc
    limit = 1 << (bits - 1) if bits else 0
    if bits and not -limit <= value < limit:
        raise ValueError(f"{wire} {value} is out of range for a Java {'int' if bits == 32 else 'long'}")
    return value


def _java_bool(wire: str, raw: object, default: bool) -> bool:
    """*raw* as fastjson 1.2.76 reads a boolean field (BooleanCodec, TypeUtils.castToBoolean): JSON
    true/false; an int 1 (true; another int false, one past Java's int range refused); a fraction by its
    int value, truncated to 32 bits (1.5 true); a string true/false (any case), 1/0, Y/y/T, F/f/N (T and N
    case-sensitive); null or an empty string the default.  ValueError for anything else (fastjson's "can
    not cast to boolean"): ``"consumeEnable": 1`` read as false stopped a group's consumption, ``"maybe"``
    was silently false."""
    if raw is None:
        return default
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        if not -(1 << 31) <= raw < (1 << 31):  # (the lexer's intValue overflows: the file does not decode)
            raise ValueError(f"{wire} is not a boolean: {raw!r:.80}")
        return raw == 1
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            raise ValueError(f"{wire} is not a boolean: {raw!r:.80}")
        return int(raw) & 0xFFFFFFFF == 1  # BigDecimal.intValue: truncated, its low 32 bits
    if isinstance(raw, str):
        if raw in _NO_NUMBER:  # (fastjson's "no value" strings, for a boolean field as for a number)
            return default
        lowered = raw.lower()
        if lowered in ("true", "y") or raw in ("1", "T"):
            return True
        if lowered in ("false", "f") or raw in ("0", "N"):
            return False
    raise ValueError(f"{wire} is not a boolean: {raw!r:.80}")


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return dict(sorted((wire, getattr(self, attr)) for attr, wire in _WIRE.items()))

    @classmethod
    def from_json(cls, obj: dict[str, Any], name: str | None = None, *,
                  java_range: bool = False) -> SubscriptionGroupConfig:
        """ValueError for a number field that is not a number (a boolean one that is no boolean, see
        :func:`_java_bool`), and with *java_range* (what a request asks for) for one out of its Java type's
        range (retryQueueNums and retryMaxTimes are ints, brokerId and whichBrokerWhenConsumeSlowly longs): a
        retryQueueNums of 2^40 would otherwise become a retry topic of 2^40 queues that no RocketMQ broker can
        load and no client can list."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            wire = _WIRE.get(f.name)
            if wire is None or wire not in obj:
                continue
            raw = obj[wire]
            if f.default is not dataclasses.MISSING and isinstance(f.default, bool):
                values[f.name] = _java_bool(wire, raw, f.default)
            elif f.default is not dataclasses.MISSING and isinstance(f.default, int):
                if raw in _NO_NUMBER:
                    continue  # the default, as fastjson leaves a primitive field it reads null into
                bits = (64 if f.name in _LONG_FIELDS else 32) if java_range else 0
                values[f.name] = _java_number(wire, raw, bits)
            else:
                values[f.name] = str(raw)
        if name is not None:
            # a table entry (the file's, a master's): its key names the group, as in 4.9.3's map, whatever
            # groupName says (an entry copied by hand to make another group, or a null groupName)
            values["group_name"] = name
        values.setdefault("group_name", "")
        return cls(**values)


class SubscriptionGroupTable(VersionedTable[SubscriptionGroupConfig]):
    def __init__(self, config_dir: str, *, auto_create: bool = True) -> None:
        super().__init__(os.path.join(config_dir, "subscriptionGroup.json"), "subscriptionGroupTable",
                         SubscriptionGroupConfig.from_json, lambda cfg: cfg.group_name,
                         {g: SubscriptionGroupConfig(g) for g in _SYSTEM_GROUPS})
        self.auto_create = auto_create

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        return self.table.get(group)

    def find_or_create(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; auto-created (and persisted) if allowed, else None.  A system group
        (``CID_RMQ_SYS_`` prefix) is created even without autoCreateSubscriptionGroup, as 4.9.3's
        findSubscriptionGroupConfig does."""
        cfg = self.table.get(group)
        if cfg is None and group and (self.auto_create or group.startswith(SYS_GROUP_PREFIX)):
            cfg = SubscriptionGroupConfig(group)
            self.update(cfg)
        return cfg

    def update(self, cfg: SubscriptionGroupConfig) -> None:
        self.table[cfg.group_name] = cfg
        self.changed()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self.changed()
        return True
