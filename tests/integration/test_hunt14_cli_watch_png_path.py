"""``broker-admin watch --png FILE`` with a FILE that cannot be written (no such directory, a directory)
fails at once with one line, before it samples: not after a watch of an hour, with the chart lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_calls import refused
from local_cluster import LocalCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("hunt14-cli-watch-png") / "store") as c:
        yield c


def test_an_unwritable_png_path_is_refused_before_the_first_sample(cluster: LocalCluster, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for png in (tmp_path / "no-such-dir" / "watch.png", tmp_path):
        err = refused(capsys, cluster, "broker-admin", "watch", "--count", "1", "--interval", "1", "--png", str(png))
        assert str(png) in err, err
    assert not (tmp_path / "no-such-dir").exists()
