"""A JSON-ready picture of a store: what `rocketstore store dump` prints.

Same structure and field names as the reference dumps of real RocketMQ stores (../shared/golden/dumps):
``commitlogRecords``, ``topics[].queues[]`` with consume-queue entries, every message read through the
pull path and the answers of "offset by time" for fixed probes, and ``queries`` for every key seen.
A message whose bytes do not decode or whose body fails its CRC (a damaged store) is listed as
``{queueOffset, commitLogOffset, storeSize, error}``: a dump of a damaged store is partial, not refused
(``store verify`` says why).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from rocketstore.errors import MessageDecodeError
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.message.record import StoredMessage, decode_record
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MAX_TIMESTAMP, MessageStore
from rocketstore.store.recovery import validate_record
from rocketstore.store.results import GetMessageStatus

__all__ = ["commitlog_records", "dump_store", "message_json"]

#: called with (phase, done, total) as a dump goes on: "commitlog" in bytes, other phases in items
Progress = Callable[[str, int, int], None]


def message_json(m: StoredMessage, queue_offset: int | None = None) -> dict[str, Any]:
    props = m.properties
    out: dict[str, Any] = {}
    if queue_offset is not None:
        out["queueOffset"] = queue_offset
    out.update({
        "commitLogOffset": m.commit_log_offset,
        "storeSize": m.store_size,
        "topic": m.topic,
        "queueId": m.queue_id,
        "tags": props.get(PropertyName.TAGS),
        "keys": props.get(PropertyName.KEYS),
        "properties": dict(sorted(props.items())),
        "flag": m.flag,
        "bodyCRC": m.body_crc,
        "bodyLength": len(m.body),
        "bodyBase64": base64.b64encode(m.body).decode("ascii"),
        "bornTimestamp": m.born_timestamp,
        "storeTimestamp": m.store_timestamp,
        "bornHost": str(m.born_host),
        "storeHost": str(m.store_host),
        "sysFlag": m.sys_flag,
        "reconsumeTimes": m.reconsume_times,
        "preparedTransactionOffset": m.prepared_transaction_offset,
        "msgId": m.msg_id,
    })
    return out


def commitlog_records(store: MessageStore, progress: Progress | None = None) -> list[dict[str, Any]]:
    """Walk every record of the commitlog: MESSAGE, BLANK, or INVALID where the walk stops."""
    out: list[dict[str, Any]] = []
    commitlog = store._commitlog
    dispatcher = store._dispatcher
    end = commitlog.max_offset
    first = commitlog.min_offset
    for mf in commitlog.files:
        if progress is not None:
            progress("commitlog", max(0, mf.start_offset - first), end - first)
        pos = 0
        limit = min(mf.wrote, end - mf.start_offset)
        while pos < limit:
            kind, size, _ = validate_record(mf, pos, mf.size_bytes, False)
            offset = mf.start_offset + pos
            if kind == "BLANK":
                out.append({"offset": offset, "type": "BLANK", "declaredSize": size, "magic": "0xCBD43194"})
                break
            if kind != "MESSAGE":
                out.append({"offset": offset, "type": "INVALID"})
                return out
            try:
                m = decode_record(mf.buffer, pos, with_body=False)
            except MessageDecodeError:  # sizes and magic agree, the fields do not (a damaged record)
                out.append({"offset": offset, "type": "INVALID"})
                return out
            props = parse_properties(m.properties_string)
            out.append({
                "offset": offset, "type": "MESSAGE", "size": size, "topic": m.topic, "queueId": m.queue_id,
                "queueOffset": m.queue_offset, "sysFlag": m.sys_flag,
                "tagsCode": dispatcher.tags_code_of(m.topic, props, m.store_timestamp),
                "storeTimestamp": m.store_timestamp, "keys": props.get(PropertyName.KEYS),
                "uniqKey": props.get(PropertyName.UNIQ_KEY),
                "preparedTransactionOffset": m.prepared_transaction_offset,
            })
            pos += size
            if progress is not None and len(out) % 4096 == 0:
                progress("commitlog", mf.start_offset + pos - first, end - first)
    return out


def _queue_json(store: MessageStore, topic: str, queue_id: int) -> dict[str, Any]:
    cq = store._queues.get(topic, queue_id)
    entries = []
    if cq is not None:
        base = cq.first_queue_offset_on_disk
        for i, e in enumerate(cq.all_entries().tolist()):
            entries.append({"queueOffset": base + i, "phyOffset": e[0], "size": e[1], "tagsCode": e[2]})
    messages: list[dict[str, Any]] = []
    offset = store.min_offset(topic, queue_id)
    while True:
        got = store.get(topic, queue_id, offset, 32)
        if got.status is GetMessageStatus.FOUND:
            for q, raw in zip(got.queue_offsets, got.records):
                try:
                    messages.append(message_json(decode_record(raw, check_crc=True), q))
                except MessageDecodeError as exc:
                    # The pull path hands out the bytes the entry names, as RocketMQ's does; a damaged record
                    # among them (its body failing its CRC too: it would be dumped as if intact) is listed
                    # with the reason, and the rest of the store is still dumped.
                    entry = cq.entry(q) if cq is not None else None
                    messages.append({"queueOffset": q, "commitLogOffset": entry[0] if entry else None,
                                     "storeSize": len(raw), "error": exc.reason})
        if got.next_begin_offset <= offset or got.status in (
                GetMessageStatus.OFFSET_OVERFLOW_ONE, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            break
        offset = got.next_begin_offset
    probes = {0, MAX_TIMESTAMP}
    decoded = [m for m in messages if "error" not in m]
    if decoded:
        first = decoded[0]["storeTimestamp"]
        last = decoded[-1]["storeTimestamp"]
        median = decoded[len(decoded) // 2]["storeTimestamp"]
        probes.update({first - 1, first, median, last, last + 1})
    return {
        "queueId": queue_id,
        "minOffset": store.min_offset(topic, queue_id),
        "maxOffset": store.max_offset(topic, queue_id),
        "cqMaxPhysicOffset": cq.max_physic_offset if cq is not None else -1,
        "cqMinLogicOffset": cq.min_logic_offset if cq is not None else 0,
        "cqEntries": entries,
        "messages": messages,
        "offsetByTime": [{"timestamp": t, "offset": store.offset_by_time(topic, queue_id, t)}
                         for t in sorted(probes)],
    }


def dump_store(store: MessageStore, progress: Progress | None = None) -> dict[str, Any]:
    """The whole picture; *progress* (phase, done, total) hears of the commitlog walk (bytes), then the
    queues and the index keys (counts)."""
    records = commitlog_records(store, progress)
    topics = store.topics()
    levels = len(store.config.delay_levels_ms())
    # The schedule service keeps one queue per delay level open, so they all show, as in RocketMQ.
    topics[SCHEDULE_TOPIC] = sorted(set(topics.get(SCHEDULE_TOPIC, [])) | set(range(levels)))
    queue_total = sum(len(qs) for qs in topics.values())
    topic_list = []
    queues_done = 0
    for t, qs in sorted(topics.items()):
        queues = []
        for q in qs:
            if progress is not None:
                progress("queues", queues_done, queue_total)
            queues.append(_queue_json(store, t, q))
            queues_done += 1
        topic_list.append({"topic": t, "queues": queues})
    keys: set[tuple[str, str]] = set()
    for r in records:
        if r["type"] != "MESSAGE":
            continue
        if r["uniqKey"]:
            keys.add((r["topic"], r["uniqKey"]))
        if r["keys"]:
            keys.update((r["topic"], k) for k in r["keys"].split(" ") if k)
    queries: list[dict[str, object]] = []
    for n, (topic, key) in enumerate(sorted(keys)):
        if progress is not None and n % 1000 == 0:
            progress("index keys", n, len(keys))
        try:
            result = store.query(topic, key, 64, 0, MAX_TIMESTAMP)
        except MessageDecodeError as exc:  # a damaged record among the hits: listed with the error
            queries.append({"topic": topic, "key": key, "error": str(exc)})
            continue
        queries.append({
            "topic": topic, "key": key,
            "indexLastUpdatePhyoffset": result.index_last_update_phy_offset,
            "indexLastUpdateTimestamp": result.index_last_update_timestamp,
            "hits": [{"commitLogOffset": m.commit_log_offset, "topic": m.topic, "queueId": m.queue_id,
                      "queueOffset": m.queue_offset, "keys": m.keys, "uniqKey": m.uniq_key}
                     for m in result.messages],
        })
    return {
        "tool": "rocketstore store dump",
        "config": {
            "mappedFileSizeCommitLog": store.config.mapped_file_size_commit_log,
            "mappedFileSizeConsumeQueue": store.config.mapped_file_size_consume_queue,
            "maxHashSlotNum": store.config.max_hash_slot_num,
            "maxIndexNum": store.config.max_index_num,
        },
        "lastShutdownAbnormal": not store.last_exit_ok,
        "afterRecover_maxPhyOffset": store.recovery.valid_end,
        "commitlog": {
            "minPhyOffset": store.min_commit_log_offset,
            "maxPhyOffset": store.max_commit_log_offset,
            "dispatchBehindBytes": store.dispatch_behind_bytes,
            "earliestMessageTime": store.earliest_message_time(),
        },
        "commitlogRecords": records,
        "topics": topic_list,
        "queries": queries,
    }
