"""``rocketstore broker-admin watch``: the running brokers' figures sampled over time, as lines and a chart.

Every ``interval_s`` each broker is asked for its runtime info (GET_BROKER_RUNTIME_INFO, what ``mqadmin
brokerStatus`` reads) and one line per broker tells what an operator watches:

- messages put and got per second, from the change of ``msgPutTotalTodayNow`` / ``msgGetTotalTodayNow`` (in
  4.9.3 and here: every message stored / handed to a pull since the broker started) between two samples of
  that broker, divided by the time between them.  The broker's own ``putTps`` / ``getTransferedTps`` are
  not used: they are averages over the broker's fixed 10 s / 1 min / 10 min windows, sampled on its clock, so
  they lag a change by up to a window and cannot be summed back into message counts; the differences of the
  totals are exact counts for exactly the watched interval (``--json`` prints them as putDelta / getDelta);
- commitlog growth (MiB/s, from ``commitLogMaxOffset``), ``dispatchBehindBytes`` (commitlog bytes not yet
  in the consume queues and index), ``pullHoldCount`` (pulls held by long polling; a rocketstore figure a
  RocketMQ broker does not report, shown as ``-`` there), ``remainHowManyDataToFlush`` (the broker's own
  text) and ``putMessageEntireTimeMax`` (the slowest put since the broker started, ms).

A broker's first sample has no rates (``-``); a total that went down (the broker restarted) counts from 0.
A broker that does not answer in a round gets an error line for that round and the watch goes on.

With a chart file the series are drawn at the end (matplotlib, the Agg backend, imported only then; it is
the ``plot`` extra): one panel each for put / got messages per second, MiB/s written, dispatch behind and
held pulls, one line per broker.  Uses client.admin's AdminClient; only cli.broker_cmds imports it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rocketstore.client.admin import AdminClient
from rocketstore.errors import RocketStoreError

__all__ = ["Figures", "WatchRow", "Watcher", "chart_problem", "draw_chart", "format_row", "header_line"]

MIB = 1 << 20
#: the line printed when matplotlib cannot be imported
PLOT_EXTRA_HINT = "--png needs matplotlib: pip install 'rocketstore[plot]' (or matplotlib>=3.7)"


def _int(table: dict[str, str], key: str) -> int | None:
    try:
        return int(table[key])
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Figures:
    """The runtime-info values the watch reads; None for one the broker did not report."""

    put_total: int | None
    get_total: int | None
    commit_log_max_offset: int | None
    dispatch_behind_bytes: int | None
    pull_hold_count: int | None
    unflushed: str | None
    put_max_ms: int | None

    @classmethod
    def from_table(cls, table: dict[str, str]) -> Figures:
        return cls(_int(table, "msgPutTotalTodayNow"), _int(table, "msgGetTotalTodayNow"),
                   _int(table, "commitLogMaxOffset"), _int(table, "dispatchBehindBytes"),
                   _int(table, "pullHoldCount"), table.get("remainHowManyDataToFlush"),
                   _int(table, "putMessageEntireTimeMax"))


def _delta(now: int | None, before: int | None, *, restarts: bool) -> int | None:
    if now is None or before is None:
        return None
    if now < before:  # a counter since start went down: the broker restarted, count from 0
        return now if restarts else None
    return now - before


@dataclass(frozen=True, slots=True)
class WatchRow:
    """One broker in one sample: its figures and the changes since its previous answered sample, or the
    error of this round."""

    sample: int
    time_ms: int
    elapsed_s: float
    broker: str
    figures: Figures | None = None
    error: str | None = None
    interval_s: float | None = None
    put_delta: int | None = None
    get_delta: int | None = None
    growth_bytes: int | None = None

    def _rate(self, delta: int | None, scale: float = 1.0) -> float | None:
        if delta is None or not self.interval_s:
            return None
        return delta / scale / self.interval_s

    @property
    def put_per_s(self) -> float | None:
        return self._rate(self.put_delta)

    @property
    def get_per_s(self) -> float | None:
        return self._rate(self.get_delta)

    @property
    def write_mib_per_s(self) -> float | None:
        return self._rate(self.growth_bytes, MIB)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sample": self.sample, "time": self.time_ms, "elapsedS": round(self.elapsed_s, 3),
                               "broker": self.broker}
        if self.error is not None:
            out["error"] = self.error
            return out
        f = self.figures
        assert f is not None  # a row has figures or an error
        out.update({
            "intervalS": None if self.interval_s is None else round(self.interval_s, 6),
            "putDelta": self.put_delta, "getDelta": self.get_delta,
            "putPerS": _round(self.put_per_s), "getPerS": _round(self.get_per_s),
            "commitLogGrowthBytes": self.growth_bytes, "writeMiBPerS": _round(self.write_mib_per_s, 4),
            "msgPutTotalTodayNow": f.put_total, "msgGetTotalTodayNow": f.get_total,
            "commitLogMaxOffset": f.commit_log_max_offset, "dispatchBehindBytes": f.dispatch_behind_bytes,
            "pullHoldCount": f.pull_hold_count, "remainHowManyDataToFlush": f.unflushed,
            "putMessageEntireTimeMax": f.put_max_ms,
        })
        return out


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


class Watcher:
    """Turns answers into rows, remembering each broker's last answered sample.  Not thread-safe."""

    def __init__(self) -> None:
        self.rows: list[WatchRow] = []
        self._last: dict[str, tuple[float, Figures]] = {}

    def answered(self, sample: int, time_ms: int, elapsed_s: float, broker: str, table: dict[str, str]) -> WatchRow:
        figures = Figures.from_table(table)
        row = WatchRow(sample, time_ms, elapsed_s, broker, figures)
        before = self._last.get(broker)
        if before is not None:
            then_s, old = before
            row = WatchRow(sample, time_ms, elapsed_s, broker, figures, interval_s=elapsed_s - then_s,
                           put_delta=_delta(figures.put_total, old.put_total, restarts=True),
                           get_delta=_delta(figures.get_total, old.get_total, restarts=True),
                           growth_bytes=_delta(figures.commit_log_max_offset, old.commit_log_max_offset,
                                               restarts=False))
        self._last[broker] = (elapsed_s, figures)
        self.rows.append(row)
        return row

    def failed(self, sample: int, time_ms: int, elapsed_s: float, broker: str, error: str) -> WatchRow:
        row = WatchRow(sample, time_ms, elapsed_s, broker, error=error)
        self.rows.append(row)
        return row

    @property
    def failures(self) -> list[WatchRow]:
        return [r for r in self.rows if r.error is not None]


async def watch(admin: AdminClient, brokers: Sequence[str], *, interval_s: float, count: int | None,
                emit: Callable[[WatchRow], None],
                lookup: Callable[[], Awaitable[Sequence[str]]] | None = None) -> Watcher:
    """Sample every broker each *interval_s* (all at once), *count* times (None: until cancelled, which
    ends the watch normally), handing each row to *emit* as it comes.  With *lookup* the brokers are asked
    for again before every sample after the first (the masters of a cluster: one that registers later is
    watched from then on, one that unregisters no longer); a failed lookup keeps the brokers it had."""
    watcher = Watcher()
    started = time.monotonic()
    sample = 0
    try:
        while count is None or sample < count:
            sample += 1
            if lookup is not None and sample > 1:
                try:
                    brokers = list(await lookup())
                except (RocketStoreError, OSError, TimeoutError):
                    pass  # the name server did not answer: the same brokers as last time
            elapsed = time.monotonic() - started
            time_ms = int(time.time() * 1000)
            answers = await asyncio.gather(*(admin.runtime_info(b) for b in brokers), return_exceptions=True)
            for broker, answer in zip(brokers, answers):
                if isinstance(answer, dict):
                    emit(watcher.answered(sample, time_ms, elapsed, broker, answer))
                elif isinstance(answer, (RocketStoreError, OSError, TimeoutError)):
                    emit(watcher.failed(sample, time_ms, elapsed, broker, str(answer) or type(answer).__name__))
                else:
                    raise answer
            if count is not None and sample >= count:
                break
            # samples on a fixed grid from the start, so a slow round does not push every later one back; the
            # ticks a slow round overran are skipped rather than caught up with (that would bunch samples a
            # few ms apart, whose rates mean little)
            now = time.monotonic()
            next_tick = started + (math.floor((now - started) / interval_s) + 1) * interval_s
            await asyncio.sleep(next_tick - now)
    except asyncio.CancelledError:  # Ctrl-C: asyncio.Runner cancels the command; stop here and report
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    return watcher


# --- text lines ---------------------------------------------------------------------------------------------

_COLUMNS = (("TIME", 8), ("BROKER", 21), ("PUT/S", 9), ("GET/S", 9), ("WRITE MiB/S", 11), ("DISPATCH BEHIND", 15),
            ("PULL HOLDS", 10), ("TO FLUSH", 10), ("PUT MAX MS", 10))


def header_line() -> str:
    return "  ".join(name.ljust(width) if i < 2 else name.rjust(width)
                     for i, (name, width) in enumerate(_COLUMNS)).rstrip()


def _cell(value: object, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_row(row: WatchRow) -> str:
    clock = datetime.fromtimestamp(row.time_ms / 1000).strftime("%H:%M:%S")
    head = [clock.ljust(_COLUMNS[0][1]), row.broker.ljust(_COLUMNS[1][1])]
    if row.error is not None:
        return "  ".join(head) + f"  error: {row.error}"
    f = row.figures
    assert f is not None
    cells = [_cell(row.put_per_s), _cell(row.get_per_s), _cell(row.write_mib_per_s, 3),
             _cell(f.dispatch_behind_bytes), _cell(f.pull_hold_count), _cell(f.unflushed), _cell(f.put_max_ms)]
    return "  ".join(head + [c.rjust(width) for c, (_, width) in zip(cells, _COLUMNS[2:])]).rstrip()


# --- the chart ----------------------------------------------------------------------------------------------


def chart_problem() -> str | None:
    """None when matplotlib imports, else the one line to print (checked before sampling starts)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return PLOT_EXTRA_HINT
    return None


def draw_chart(rows: Sequence[WatchRow], path: str) -> None:
    """Four panels over the watch's time, one line per broker (a gap where a round failed); PNG at *path*."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt

    brokers = sorted({r.broker for r in rows})
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    panels: list[tuple[Any, str, list[tuple[str, Callable[[WatchRow], float | None], str]]]] = [
        (axes[0][0], "messages / s", [("put", lambda r: r.put_per_s, "-"), ("got", lambda r: r.get_per_s, "--")]),
        (axes[0][1], "commitlog MiB / s written", [("", lambda r: r.write_mib_per_s, "-")]),
        (axes[1][0], "dispatch behind (bytes)",
         [("", lambda r: None if r.figures is None else _float(r.figures.dispatch_behind_bytes), "-")]),
        (axes[1][1], "pulls held (long polling)",
         [("", lambda r: None if r.figures is None else _float(r.figures.pull_hold_count), "-")]),
    ]
    for ax, title, series in panels:
        for broker in brokers:
            mine = [r for r in rows if r.broker == broker]
            xs = [r.elapsed_s for r in mine]
            for label, value, style in series:
                ys = [math.nan if (v := value(r)) is None else v for r in mine]
                ax.plot(xs, ys, style, marker="o", markersize=3,
                        label=f"{broker} {label}".strip())
        ax.set_title(title)
        ax.set_ylim(bottom=0)  # every figure is a count or a rate: no negative axis under a flat zero line
        ax.grid(True, alpha=0.3)
        if brokers:
            ax.legend(fontsize="small")
    for ax in axes[1]:
        ax.set_xlabel("seconds since the watch started")
    if not rows:
        fig.suptitle("no samples")
    else:
        began = datetime.fromtimestamp(rows[0].time_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
        fig.suptitle(f"broker runtime figures from {began}")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=90)
    plt.close(fig)


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)
