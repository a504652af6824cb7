"""``rocketstore consume -g G --from last`` on a group with no offset starts at the queues' ends and commits
them, as a Java consumer from CONSUME_FROM_LAST_OFFSET stores a queue's end once its first pull finds
nothing.  Before, such a run that found nothing committed nothing, so the next ``--from last`` run started
at the (new) ends again and never printed what was sent between the two runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok, ok_json
from local_cluster import LocalCluster

TOPIC = "Hunt29FromLast"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 1)
        yield c


def test_a_second_from_last_run_gets_what_was_sent_after_the_first(capsys: pytest.CaptureFixture[str],
                                                                   cluster: LocalCluster) -> None:
    ok(capsys, cluster, "send", TOPIC, "old", "--queue", "0")
    args = ("consume", TOPIC, "-g", "hunt29-last", "--from", "last", "--timeout", "1")
    first = ok_json(capsys, cluster, *args)
    assert first["messages"] == []
    assert [(c["queueId"], c["offset"]) for c in first["committed"]] == [(0, 1)]
    ok(capsys, cluster, "send", TOPIC, "new", "--queue", "0")
    second = ok_json(capsys, cluster, *args)
    assert [m["body"] for m in second["messages"]] == ["new"]
    assert [(c["queueId"], c["offset"]) for c in second["committed"]] == [(0, 2)]
