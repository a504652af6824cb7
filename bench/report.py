"""Output: bench/results/latest.json (the rows), a console table, and for --full BENCHMARKS.md + a chart."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable
from typing import Any

from bench.common import Notes, Row

__all__ = ["console_table", "machine_info", "write_chart", "write_json", "write_markdown"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024 / (1 << 30)
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    except (ValueError, OSError):
        return 0.0


def machine_info() -> dict[str, object]:
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count() or 0
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "nproc": nproc,
        "ram_gib": round(_ram_gib(), 1),
        "cpu": _cpu_model(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "kernel": platform.release(),
        "load_average": [round(x, 2) for x in load],
    }


def write_json(rows: Iterable[Row], path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    data = [r.as_json() for r in rows]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    os.replace(tmp, path)


def _num(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def _ratio(row: Row) -> str:
    r = row.ratio
    return f"{r:,.0f}x" if r >= 100 else f"{r:.3g}x"


def _target(row: Row) -> str:
    if row.target_ratio is None:
        return "-"
    op = ">=" if row.better == "higher" else "<="
    return f"{op} {row.target_ratio:g}x " + ("met" if row.met else "**not met**")


def _targets_section(add: Any, rows: list[Row], notes: Notes) -> None:
    """Every row the issue sets a target for, met or not, before the long tables."""
    targeted = [r for r in rows if r.target_ratio is not None]
    if not targeted and not notes.absolute:
        return
    met = sum(1 for r in targeted if r.met) + sum(1 for *_, ok in notes.absolute if ok)
    add("## Targets at a glance")
    add("")
    add(f"{met} of {len(targeted) + len(notes.absolute)} targets met in this run.")
    add("")
    add("| workload | against | ratio | target |")
    add("|---|---|---:|---|")
    for r in targeted:
        add(f"| {r.name} | {r.reference} | {_ratio(r)} | {_target(r)} |")
    for what, measured, limit, ok in notes.absolute:
        add(f"| {what} | (absolute) | {measured} | {limit} {'met' if ok else '**not met**'} |")
    add("")


def _history_section(add: Any) -> None:
    """bench/HISTORY.md, kept by hand: what was tried against each missed target and what it gave.

    A ``--full`` run rewrites everything else in BENCHMARKS.md, so the record of attempts lives beside the
    bench and is copied in, not typed into the generated file where the next run would erase it.
    """
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "HISTORY.md")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read().strip()
    except FileNotFoundError:
        return
    add("")
    for line in text.splitlines():
        add(line)


def console_table(rows: list[Row]) -> str:
    out = []
    width = max((len(r.name) for r in rows), default=10)
    out.append(f"{'workload':<{width}}  {'ours':>12}  {'reference':>12}  {'ratio':>9}  target")
    for r in rows:
        out.append(f"{r.name:<{width}}  {_num(r.ours):>12}  {_num(r.reference_value):>12}  {_ratio(r):>9}  "
                   f"{_target(r).replace('**', '')}")
    return "\n".join(out)


def write_markdown(path: str, rows: list[Row], notes: Notes, info: dict[str, object], command: str,
                   started: str, elapsed_s: float, chart: str | None, profile: dict[str, Any] | None,
                   broker_profile: dict[str, Any] | None = None) -> None:
    lines: list[str] = []
    add = lines.append
    add("# Benchmarks")
    add("")
    add("Workloads of `rocketstore`: the embedded store in this process, and the broker (`rocketstore serve` "
        "in its own process) driven over TCP loopback by our client. Every figure is a **ratio against a peer or a ceiling measured in the same run**: each "
        "workload runs in rounds that alternate ours and its references (A B, B A, ...), and a row compares "
        "the median of ours with the median of the reference (latency percentiles pool every round's "
        "samples). The machines are shared and noisy: read the ratios, not the absolute numbers. `ratio` is "
        "ours / reference; for latencies lower is better. The one exception is the group marked 'informational', "
        "which divides by a figure from /work/shared/ANCHORS.md (the real RocketMQ broker on this machine "
        "class, not measured in this run) and is left off the chart.")
    add("")
    add(f"Produced by `{command}` (from the repository root), started {started}, "
        f"took {elapsed_s / 60:.1f} min.")
    add("")
    _targets_section(add, rows, notes)
    add("## Machine")
    add("")
    add("| what | value |")
    add("|---|---|")
    add(f"| CPU | {info['cpu']} |")
    add(f"| nproc | {info['nproc']} |")
    add(f"| RAM | {info['ram_gib']} GiB |")
    add(f"| Python | {info['python']} |")
    add(f"| kernel | {info['kernel']} |")
    add(f"| load average at start / end | {info.get('load_start')} / {info.get('load_end')} |")
    for key, value in notes.extra.items():
        if key.startswith("machine:"):
            add(f"| {key[8:]} | {value} |")
    for key, value in notes.extra.items():
        if key.startswith("peer:"):
            add(f"| {key[5:]} | {value} |")
    add("")
    add("## Results")
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.group, []).append(r)
    for group, members in groups.items():
        add("")
        add(f"### {group}")
        add("")
        add("| workload | ours | reference | reference value | ratio | target |")
        add("|---|---:|---|---:|---:|---|")
        for r in members:
            add(f"| {r.name} | {_num(r.ours)} {r.unit} | {r.reference} | "
                f"{_num(r.reference_value)} {r.unit} | "
                f"{_ratio(r)} | {_target(r)} |")
    if notes.absolute:
        add("")
        add("### Absolute targets")
        add("")
        add("| what | measured | target | |")
        add("|---|---:|---|---|")
        for what, measured, limit, ok in notes.absolute:
            add(f"| {what} | {measured} | {limit} | {'met' if ok else '**not met**'} |")
    if chart:
        add("")
        add(f"![ratios against the same-run references]({chart})")
    add("")
    add("## Notes")
    add("")
    for text in notes.caveats:
        add(f"- {text}")
    for text in notes.skipped:
        add(f"- Skipped: {text}")
    if profile:
        _profile_section(add, profile, rows)
    if broker_profile:
        _broker_profile_section(add, broker_profile, rows, notes)
    _history_section(add)
    add("")
    add("## Reproduce")
    add("")
    add("```sh")
    add("pip install -e '.[bench]'            # persist-queue, litequeue, matplotlib, py-spy, pyinstrument, uvloop")
    add("apt-get install -y redis-server      # optional: the Redis rows are skipped without it")
    add("apt-get install -y nats-server       # optional: the NATS JetStream rows are skipped without it")
    add(f"{command}")
    add("```")
    add("")
    add("`--quick` runs the same workloads with smaller counts (a minute or two) and writes only "
        "`bench/results/latest.json`; `--smoke` is the test suite's seconds-long run.")
    add("")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def _profile_section(add: Any, profile: dict[str, Any], rows: list[Row]) -> None:
    n = profile["n"]
    add("")
    add("## Where the time goes")
    add("")
    rates = {r.name: r for r in rows}
    put = rates.get(f"put {profile['body_bytes']} B")
    quiet = rates.get(f"put {profile['body_bytes']} B, no background threads (open(background=False))")
    if put is not None and quiet is not None:
        add(f"Unprofiled (the rows above): {put.ours:,.0f} puts/s on a normal store, "
            f"{quiet.ours:,.0f} puts/s "
            f"with no background threads, against {put.reference_value:,.0f} records/s for the encode + "
            f"warm-mmap ceiling. The gap between the first two is the GIL time the dispatch thread (consume "
            "queue + index) takes from the putting thread.")
        add("")
    add(f"**1. The put path alone**: {n:,} `store.put` calls of {profile['body_bytes']} B messages on a "
        "store "
        f"opened with `background=False`, under cProfile ({profile['put_seconds']:.2f} s, "
        f"{n / profile['put_seconds']:,.0f} puts/s under the profiler, whose overhead inflates short "
        "functions). Top functions by own time:")
    add("")
    _cprofile_table(add, profile["put"], "per put")
    add("")
    add(f"**2. Dispatch of the same {n:,} records** (`wait_dispatched()` runs it in the calling thread; in a "
        "normal store the dispatch thread does this beside the puts, and abnormal recovery does it for every "
        f"record): {profile['dispatch_seconds']:.2f} s under cProfile "
        f"({profile['dispatch_seconds'] / n * 1e6:.1f} µs per record). Top functions by own time:")
    add("")
    _cprofile_table(add, profile["dispatch"], "per record")
    if profile.get("pyinstrument"):
        add("")
        add(f"**3. pyinstrument** (sampling every 0.5 ms, wall clock of the putting thread, GIL waits "
            f"included) of {n:,} puts on a normal store with its background threads "
            f"({n / profile['pyinstrument_seconds']:,.0f} puts/s while sampled):")
        add("")
        add("```")
        add(str(profile["pyinstrument"]))
        add("```")
    elif "pyinstrument" in profile:
        add("")
        add("(pyinstrument is not installed: only cProfile's views.)")


def _broker_profile_section(add: Any, prof: dict[str, Any], rows: list[Row], notes: Notes) -> None:
    size = f"{prof['body_bytes']} B"
    add("")
    add("## Where the broker's time goes")
    add("")
    row = next((r for r in rows if r.name.startswith(f"send {size}, one at a time")), None)
    if row is not None:
        add(f"Unprofiled (the row above): {row.ours:,.0f} sends/s one at a time against {row.reference_value:,.0f} "
            "unpipelined Redis XADDs/s.")
        add("")
    cpu = notes.extra.get(f"cpu per one-at-a-time send {size}")
    if isinstance(cpu, dict):
        add(f"CPU per message in those rounds (from /proc and `time.process_time()`): broker process "
            f"{cpu['broker']:.0f} µs, our client {cpu['client']:.0f} µs; redis-server {cpu['redis']:.1f} µs, "
            f"its RESP client {cpu['rclient']:.1f} µs per XADD.")
        add("")
    add(f"py-spy (`py-spy record --pid <broker> --rate {prof['sample_rate']} --format raw --threads`, idle "
        f"filter on) of the broker process for {prof['duration']} s of one-at-a-time {size} sends "
        f"({prof['sends']:,} sends, {prof['rate']:,.0f}/s while sampled, broker CPU "
        f"{prof['broker_cpu_per_send_us']:.0f} µs per send); {prof['samples']:,} samples in all. "
        "py-spy's idle filter does not catch every wait here: own samples in `Runner.run` (the event "
        "loop's epoll wait) and `Condition.wait` (the dispatch thread's 1 ms poll) are waiting, not work. "
        "Samples per thread:")
    add("")
    add("| thread | samples | share |")
    add("|---|---:|---:|")
    total = prof["samples"] or 1
    for thread, n in prof["threads"]:
        add(f"| {thread} | {n:,} | {n / total:.1%} |")
    add("")
    add("Top functions by own samples (the innermost Python frame; C code and syscalls count to the Python "
        "function that called them):")
    add("")
    add("| function | own samples | share |")
    add("|---|---:|---:|")
    for func, n in prof["own"]:
        add(f"| `{func}` | {n:,} | {n / total:.1%} |")
    add("")
    add("Top functions by inclusive samples (the function or anything it called):")
    add("")
    add("| function | inclusive samples | share |")
    add("|---|---:|---:|")
    for func, n in prof["inclusive"]:
        add(f"| `{func}` | {n:,} | {n / total:.1%} |")


def _cprofile_table(add: Any, entries: list[dict[str, Any]], per: str) -> None:
    add(f"| function | calls | own time | share | µs {per} | cumulative |")
    add("|---|---:|---:|---:|---:|---:|")
    for r in entries:
        add(f"| `{r['function']}` | {r['ncalls']:,} | {r['tottime_s']:.3f} s | {r['tottime_share']:.1%} | "
            f"{r['per_op_us']:.2f} | {r['cumtime_s']:.3f} s |")


def write_chart(rows: list[Row], path: str) -> str | None:
    """A horizontal bar chart of every ratio (log scale) with the targets marked; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = [r for r in rows if not r.group.startswith("informational")]  # not same-run: kept off the chart
    n = len(rows)
    fig, ax = plt.subplots(figsize=(13, max(4.0, 0.26 * n + 1.6)))
    ys = list(range(n))[::-1]
    colors = []
    for r in rows:
        if r.met is None:
            colors.append("#8fa8c8")
        else:
            colors.append("#4caf50" if r.met else "#e05050")
    ax.barh(ys, [r.ratio for r in rows], color=colors, height=0.7)
    for y, r in zip(ys, rows):
        if r.target_ratio is not None:
            ax.plot([r.target_ratio, r.target_ratio], [y - 0.42, y + 0.42], color="black", linewidth=1.5)
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r.name}{' (lower is better)' if r.better == 'lower' else ''}" for r in rows],
                       fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="#444444", linewidth=0.6, linestyle=":")
    ax.set_xlabel("ratio: ours / same-run reference (log scale)")
    ax.set_title("rocketstore (embedded store and broker over loopback) vs same-run references\n"
                 "black tick: target; green: met, red: not met, blue: no target", fontsize=10)
    ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)
    fig.subplots_adjust(left=0.40, right=0.98, top=1 - 0.9 / fig.get_figheight(),
                        bottom=0.7 / fig.get_figheight())
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def python_version() -> str:
    return sys.version.split()[0]
