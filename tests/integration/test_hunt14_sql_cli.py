"""``rocketstore consume --sql``: the expression is checked before anything is pulled, so an empty one is
refused instead of silently consuming every message as if no filter had been given, and a malformed one
says where it is wrong instead of the broker's bare "parse the consumer's subscription failed"."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, wait_stored
from serve_process import cli


def test_consume_refuses_an_empty_or_malformed_sql_and_consumes_nothing(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", enable_property_filter=True) as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        sent = cli("send", "CliSqlCheck", "m-{i}", "--count", "2", "--property", "region=eu", *ns)
        assert sent.returncode == 0, sent.stderr
        wait_stored(cluster, "CliSqlCheck", 2, "two messages")

        for sql in ("", "   "):
            out = cli("consume", "CliSqlCheck", "-g", "cli-sql-check", "--sql", sql, "--timeout", "2", *ns)
            assert out.returncode == 1, (sql, out.stdout, out.stderr)
            assert "m-0" not in out.stdout and "m-1" not in out.stdout, (sql, out.stdout)
            assert "--sql" in out.stderr and "invalid SQL92 filter" in out.stderr, (sql, out.stderr)

        out = cli("consume", "CliSqlCheck", "-g", "cli-sql-check", "--sql", "region = 'eu' AND a >",
                  "--timeout", "2", *ns)
        assert out.returncode == 1, out.stdout
        assert "invalid SQL92 filter" in out.stderr and "column 22" in out.stderr, out.stderr

        # nothing was committed for the group: a good expression still gets both messages
        out = cli("consume", "CliSqlCheck", "-g", "cli-sql-check", "--sql", "region = 'eu'", "--timeout", "2", *ns)
        assert out.returncode == 0, out.stderr
        assert "m-0" in out.stdout and "m-1" in out.stdout, out.stdout
