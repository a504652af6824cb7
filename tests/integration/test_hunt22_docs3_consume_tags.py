"""``rocketstore consume --tags '||'``: a tag expression of separators only names no tag (4.9.3's subscribe
refuses it); the command says so in its usual one line and exit status 1, not with a traceback of the first
pull's refusal."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, wait_stored
from serve_process import cli


def test_consume_refuses_a_tag_expression_of_separators_only_in_one_line(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        sent = cli("send", "CliTagsCheck", "m-{i}", "--tags", "TagA", "--count", "2", *ns)
        assert sent.returncode == 0, sent.stderr
        wait_stored(cluster, "CliTagsCheck", 2, "two messages")

        for tags in ("||", " || ||"):
            out = cli("consume", "CliTagsCheck", "-g", "cli-tags-check", "--tags", tags, "--timeout", "2", *ns)
            assert out.returncode == 1, (tags, out.stdout, out.stderr)
            assert "Traceback" not in out.stderr, out.stderr
            assert "--tags" in out.stderr and "names no tag" in out.stderr, (tags, out.stderr)

        # a separator beside a tag is that tag, as in 4.9.3
        out = cli("consume", "CliTagsCheck", "-g", "cli-tags-check", "--tags", "|| TagA", "--timeout", "2", *ns)
        assert out.returncode == 0, out.stderr
        assert "m-0" in out.stdout and "m-1" in out.stdout, out.stdout
