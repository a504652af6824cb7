"""``rocketstore pipeline report``'s charts on the data a long-lived store holds, and its --output checked
before Spark starts.

The per-hour panel is a time axis: hours a year apart (the same month, day and hour) are two points, not
one category drawn twice, and two months of hourly traffic get a few date ticks rather than 1440
overlapping labels.  The per-topic and lag panels show the largest few of many topics / queues."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from rocketstore.cli.main import main
from rocketstore.spark.report import GroupLag, TrafficRow, _figure, render_report

CLEAN = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "stores" / "clean"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _row(hour: datetime, count: int = 5, topic: str = "T") -> TrafficRow:
    return TrafficRow(topic, 0, None, hour, count, count * 10)


def _hour_line_days(rows: list[TrafficRow]) -> list[float]:
    """The per-hour panel's x values, as matplotlib date numbers (days)."""
    fig = _figure(rows, [])
    try:
        line = fig.axes[2].get_lines()[0]
        return [float(x) for x in mdates.date2num(line.get_xdata())]
    finally:
        plt.close(fig)


def test_hours_a_year_apart_are_drawn_a_year_apart() -> None:
    first, later = datetime(2024, 3, 1, 10), datetime(2025, 3, 1, 10)  # the same "03-01 10:00"
    days = _hour_line_days([_row(first, 5), _row(later, 9)])
    assert days[0] == pytest.approx(mdates.date2num(first))
    assert days[-1] == pytest.approx(mdates.date2num(later))
    assert days == sorted(days) and len(set(days)) == len(days)


def test_an_hour_without_messages_is_drawn_as_zero_between_two_with_messages() -> None:
    start = datetime(2025, 1, 1, 0)
    fig = _figure([_row(start, 5), _row(start + timedelta(hours=3), 7)], [])
    try:
        line = fig.axes[2].get_lines()[0]
        assert list(line.get_ydata()) == [5, 0, 0, 7]
        assert fig.axes[2].get_ylim()[0] == 0
    finally:
        plt.close(fig)


def test_two_months_of_hourly_traffic_get_a_few_date_ticks() -> None:
    start = datetime(2025, 1, 1)
    rows = [_row(start + timedelta(hours=h)) for h in range(24 * 60)]
    fig = _figure(rows, [])
    try:
        fig.canvas.draw()
        ax = fig.axes[2]
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert 2 <= len(labels) <= 20, labels
        low, high = ax.get_xlim()
        assert high - low >= 59  # the axis spans the two months (in days)
    finally:
        plt.close(fig)


def test_many_topics_and_lagging_queues_show_the_largest() -> None:
    hour = datetime(2025, 1, 1)
    rows = [_row(hour, count=i + 1, topic=f"topic{i:03d}") for i in range(300)]
    lags = [GroupLag(f"g{g}", "T", q, 0, g * 8 + q) for g in range(50) for q in range(8)]
    fig = _figure(rows, lags)
    try:
        topics_ax, _, _, lag_ax = fig.axes
        fig.canvas.draw()
        shown = [t.get_text() for t in topics_ax.get_xticklabels()]
        assert 1 <= len(shown) <= 20 and "topic299" in shown  # the busiest topic
        assert "of 300" in topics_ax.get_title()
        bars = lag_ax.patches
        assert 1 <= len(bars) <= 20
        assert max(bar.get_width() for bar in bars) == 49 * 8 + 7  # the worst queue is there
        assert "of 400" in lag_ax.get_title()
    finally:
        plt.close(fig)


@pytest.mark.parametrize("rows", [[], [_row(datetime(2025, 6, 1, 3))]], ids=["empty", "one-hour"])
def test_a_store_with_no_or_one_hour_of_traffic_still_gets_its_report(tmp_path: Path,
                                                                       rows: list[TrafficRow]) -> None:
    result = render_report("store", str(tmp_path / "report"), rows, [GroupLag("g", "T", 0, 0, 0)])
    assert Path(result.png_path).read_bytes().startswith(PNG_MAGIC)
    if rows:
        fig = _figure(rows, [])
        try:
            low, high = fig.axes[2].get_xlim()
            assert high - low <= 2  # a day around the hour, not the years a lone date is widened to
        finally:
            plt.close(fig)


def test_tags_with_dollar_signs_are_drawn_as_text_not_math(tmp_path: Path) -> None:
    # a tag is free text; "$x_$" is not valid mathtext, and it used to fail the whole report after the scan
    hour = datetime(2025, 1, 1)
    tags = ["$x_$", "$\\frac$", "$a$", "price$"]
    rows = [TrafficRow("T", 0, tag, hour, n, n) for n, tag in enumerate(tags, 1)]
    result = render_report("store", str(tmp_path / "report"), rows, [])
    assert Path(result.png_path).read_bytes().startswith(PNG_MAGIC)
    assert "$x_$" in Path(result.html_path).read_text(encoding="utf-8")


def test_report_into_a_file_is_refused_before_spark_starts(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspark")
    if not CLEAN.is_dir():
        pytest.skip(f"golden store missing: {CLEAN}")
    target = tmp_path / "report.html"
    target.write_text("not a directory")
    for output in (target, target / "sub"):
        assert main(["pipeline", "report", "--store", str(CLEAN), "--output", str(output)]) == 2
        err = capsys.readouterr().err
        assert "rocketstore: error: --output" in err, err
        assert "rocketstore pipeline: aggregating" not in err, err  # no Spark job ran first
    assert target.read_text() == "not a directory"
