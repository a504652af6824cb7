"""human_bytes, the runtime info's remainHowManyDataToFlush and commitLogDirCapacity figures: 4.9.3's
MixAll.humanReadableByteCount formats with Java's ``%.1f``, which rounds a half up (1.25 KiB is "1.3 KiB")."""

from __future__ import annotations

import pytest

from rocketstore.broker.stats_admin import human_bytes


@pytest.mark.parametrize(("count", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1280, "1.3 KiB"), (3328, "3.3 KiB"), (1792, "1.8 KiB"),
    (1126, "1.1 KiB"), (1048575, "1024.0 KiB"), (1310720, "1.3 MiB"), (5 * 2**30 + 2**28, "5.3 GiB"),
    (2**50, "1.0 PiB"), (2**60, "1.0 EiB"),
])
def test_human_bytes_rounds_as_javas_format(count: int, text: str) -> None:
    assert human_bytes(count) == text
