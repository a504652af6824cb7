"""``rocketstore pipeline report``: traffic of a store directory per topic / queue / tag / hour, consumer lag
per group, written as CSV, a PNG of charts (matplotlib) and one self-contained HTML page (inline CSS, the
PNG embedded as base64).

The store is only ever opened read-only (the Spark source opens it read-only; the lag look-up opens it with
``read_only=True``), so a report can run on a golden or a live store.  pyspark and matplotlib are imported
inside the functions that need them.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from rocketstore.config_json import TOPIC_GROUP_SEPARATOR, read_offset_table
from rocketstore.spark.store_options import detect_config
from rocketstore.store.message_store import MessageStore

__all__ = ["GroupLag", "ReportResult", "TrafficRow", "consumer_lag", "render_report", "traffic"]


@dataclass(frozen=True, slots=True)
class TrafficRow:
    topic: str
    queue_id: int
    tags: str | None
    hour: datetime
    message_count: int
    body_bytes: int


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    topic: str
    queue_id: int
    committed_offset: int
    max_offset: int

    @property
    def lag(self) -> int:
        return max(0, self.max_offset - self.committed_offset)


@dataclass(frozen=True, slots=True)
class ReportResult:
    html_path: str
    png_path: str
    traffic_rows: int
    message_count: int
    groups: int


def traffic(spark: Any, store: str) -> list[TrafficRow]:
    """Counts and body bytes per topic / queue / tag / hour (store time, UTC) of every non-system topic."""
    from pyspark.sql import functions as F

    df = spark.read.format("rocketmq-store").option("path", store).load()
    # the hour as epoch seconds: date_trunc would cut in the session's time zone, and collected timestamps
    # come back as naive datetimes in this process's local zone; the report's hours are UTC
    hour = (F.expr("unix_micros(storeTimestamp) div 3600000000") * 3600).alias("hour")
    grouped = (df.groupBy("topic", "queueId", "tags", hour)
               .agg(F.count(F.lit(1)).alias("n"), F.coalesce(F.sum(F.length("body")), F.lit(0)).alias("bytes"))
               .orderBy("topic", "queueId", "tags", "hour"))
    return [TrafficRow(r["topic"], r["queueId"], r["tags"], _utc_hour(r["hour"]), r["n"], r["bytes"])
            for r in grouped.collect()]


def _utc_hour(epoch_seconds: int) -> datetime:
    """A naive datetime holding the UTC wall time of *epoch_seconds* (the report labels hours as UTC)."""
    return datetime.fromtimestamp(epoch_seconds, UTC).replace(tzinfo=None)


def consumer_lag(store: str) -> list[GroupLag]:
    """Per group and queue: committed offset (config/consumerOffset.json) against the queue's max offset.

    Empty when the store has no consumerOffset.json.  Retry topics (``%RETRY%``) are listed like the rest.
    The file is read as the broker reads it at start (:func:`rocketstore.config_json.read_offset_table`): its
    ``.bak`` when it is missing, empty or unreadable, CorruptFileError when the ``.bak`` is needed and
    unreadable too (such a broker does not start), an entry that is no number left out.
    """
    table = read_offset_table(os.path.join(store, "config", "consumerOffset.json"))
    if not table:
        return []
    out = []
    with MessageStore.open(store, detect_config(store), read_only=True, index_wanted=False) as ms:
        for topic_at_group, queues in sorted(table.items()):
            topic, _, group = topic_at_group.partition(TOPIC_GROUP_SEPARATOR)
            for qid, offset in sorted(queues.items()):
                out.append(GroupLag(group, topic, qid, offset, ms.max_offset(topic, qid)))
    return out


def _write_csv(path: str, header: list[str], rows: list[list[object]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


#: at most this many bars in the per-topic panels, and in the lag and tag panels (one label a line): the
#: largest, so a store of many topics or queues keeps a legible chart (the HTML tables list every one)
_MAX_BARS = 20
_MAX_ROWS = 12
#: the per-hour line counts an hour without messages as 0 across at most this many hours (about 11 years);
#: a wider span (a stray store time) is drawn as its hours with messages only, as points
_MAX_FILLED_HOURS = 100_000


def _plain(label: str) -> str:
    """*label* drawn as it reads: a tag is free text, and matplotlib would take "$...$" in it for math (and
    fail the whole report on one it cannot parse, such as "$x_$")."""
    return label.replace("$", r"\$")


def _largest(counts: dict[str, int], limit: int) -> list[str]:
    """The keys of the *limit* largest counts, largest first (ties in key order)."""
    return [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def _figure(rows: list[TrafficRow], lags: list[GroupLag]) -> Any:
    """The report's four panels as a matplotlib Figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    by_topic: dict[str, list[int]] = {}
    by_hour: dict[datetime, int] = {}
    by_tag: dict[str, int] = {}
    for r in rows:
        n, b = by_topic.setdefault(r.topic, [0, 0])
        by_topic[r.topic] = [n + r.message_count, b + r.body_bytes]
        by_hour[r.hour] = by_hour.get(r.hour, 0) + r.message_count
        tag = r.tags if r.tags is not None else "(none)"
        by_tag[tag] = by_tag.get(tag, 0) + r.message_count
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    topics = _largest({t: n for t, (n, _) in by_topic.items()}, _MAX_BARS)
    shown = f" (top {len(topics)} of {len(by_topic)})" if len(topics) < len(by_topic) else ""
    axes[0][0].bar([_plain(t) for t in topics], [by_topic[t][0] for t in topics], color="#3b6ea5")
    axes[0][0].set_title("messages per topic" + shown)
    axes[0][1].bar([_plain(t) for t in topics], [by_topic[t][1] / 1024 for t in topics], color="#e07b39")
    axes[0][1].set_title("body KiB per topic" + shown)
    # a time axis, not one category per hour: hours a year apart stay apart, an hour without messages is 0,
    # and a store of months gets a few date ticks instead of thousands of overlapping labels
    ax = axes[1][0]
    hours = sorted(by_hour)
    if hours:
        span = int((hours[-1] - hours[0]).total_seconds()) // 3600 + 1
        if span <= _MAX_FILLED_HOURS:
            xs = [hours[0] + timedelta(hours=i) for i in range(span)]
            ax.plot(xs, [by_hour.get(h, 0) for h in xs], marker="o" if span <= 200 else "", markersize=4)
        else:
            ax.plot(hours, [by_hour[h] for h in hours], linestyle="", marker="o", markersize=3)
        if span == 1:  # one hour: a day around it, not the years matplotlib widens a single date to
            ax.set_xlim(hours[0] - timedelta(hours=12), hours[0] + timedelta(hours=12))
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_ylim(bottom=0)
    ax.set_title("messages per hour (store time, UTC)")
    if lags:
        lag_of = {f"{g.group} {g.topic}:{g.queue_id}": g.lag for g in lags}
        worst = _largest(lag_of, _MAX_ROWS)[::-1]  # the largest at the top
        axes[1][1].barh([_plain(k) for k in worst], [lag_of[k] for k in worst], color="#b03a48")
        axes[1][1].set_title("consumer lag (messages" + (f", top {len(worst)} of {len(lag_of)} queues)"
                                                         if len(worst) < len(lag_of) else ")"))
    else:
        top = sorted(by_tag.items(), key=lambda kv: -kv[1])[:_MAX_ROWS]
        axes[1][1].barh([_plain(t) for t, _ in top], [n for _, n in top], color="#5a9e6f")
        axes[1][1].set_title("messages per tag (top 12)")
    for ax in (axes[0][0], axes[0][1], axes[1][1]):
        for label in ax.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
    fig.tight_layout()
    return fig


def _charts(rows: list[TrafficRow], lags: list[GroupLag]) -> bytes:
    import matplotlib.pyplot as plt

    fig = _figure(rows, lags)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#eef}td.l{text-align:left}img{max-width:100%}h1{font-size:1.5em}.lag{color:#b03a48}"""


def _table(header: list[str], rows: list[list[object]], left: int = 1) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td{' class=l' if i < left else ''}>{html.escape(str(v))}</td>"
                                    for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_report(store: str, output: str, rows: list[TrafficRow], lags: list[GroupLag]) -> ReportResult:
    """Write traffic.csv, lag.csv, report.png and report.html under *output*."""
    os.makedirs(output, exist_ok=True)
    _write_csv(os.path.join(output, "traffic.csv"), ["topic", "queueId", "tags", "hour", "messages", "bodyBytes"],
               [[r.topic, r.queue_id, r.tags or "", r.hour.isoformat(), r.message_count, r.body_bytes] for r in rows])
    _write_csv(os.path.join(output, "lag.csv"), ["group", "topic", "queueId", "committedOffset", "maxOffset", "lag"],
               [[g.group, g.topic, g.queue_id, g.committed_offset, g.max_offset, g.lag] for g in lags])
    png = _charts(rows, lags)
    png_path = os.path.join(output, "report.png")
    with open(png_path, "wb") as f:
        f.write(png)

    topics: dict[str, list[int]] = {}
    queues: dict[tuple[str, int], list[int]] = {}
    tags: dict[tuple[str, str], int] = {}
    for r in rows:
        t = topics.setdefault(r.topic, [0, 0])
        t[0] += r.message_count
        t[1] += r.body_bytes
        q = queues.setdefault((r.topic, r.queue_id), [0, 0])
        q[0] += r.message_count
        q[1] += r.body_bytes
        key = (r.topic, r.tags if r.tags is not None else "(none)")
        tags[key] = tags.get(key, 0) + r.message_count
    total = sum(t[0] for t in topics.values())
    group_lag: dict[str, int] = {}
    for g in lags:
        group_lag[g.group] = group_lag.get(g.group, 0) + g.lag
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>rocketstore report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Store report: {html.escape(store)}</h1>",
        f"<p>{total} messages in {len(topics)} topics; generated {generated}.</p>",
        f"<img alt='charts' src='data:image/png;base64,{base64.b64encode(png).decode()}'>",
        "<h2>Topics</h2>",
        _table(["topic", "messages", "body bytes"], [[t, n, b] for t, (n, b) in sorted(topics.items())]),
        "<h2>Consumer lag</h2>",
        _table(["group", "lag"], [[g, n] for g, n in sorted(group_lag.items())])
        + _table(["group", "topic", "queue", "committed", "max", "lag"],
                 [[g.group, g.topic, g.queue_id, g.committed_offset, g.max_offset, g.lag] for g in lags], left=2)
        if lags else "<p>No config/consumerOffset.json in this store: no committed offsets to compare.</p>",
        "<h2>Queues</h2>",
        _table(["topic", "queue", "messages", "body bytes"],
               [[t, q, n, b] for (t, q), (n, b) in sorted(queues.items())]),
        "<h2>Tags</h2>",
        _table(["topic", "tag", "messages"], [[t, g, n] for (t, g), n in sorted(tags.items())], left=2),
        "<h2>Per hour</h2>",
        _table(["topic", "queue", "tag", "hour (UTC)", "messages", "body bytes"],
               [[r.topic, r.queue_id, r.tags or "", r.hour.strftime("%Y-%m-%d %H:00"), r.message_count,
                 r.body_bytes] for r in rows], left=3),
        "</body></html>",
    ]
    html_path = os.path.join(output, "report.html")
    with open(html_path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return ReportResult(html_path, png_path, len(rows), total, len(group_lag))
