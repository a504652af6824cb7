"""The ``rocketmq`` source's and sink's TLS file options are made absolute where they are parsed (planning,
on the driver's host): executors open the files from working directories of their own (work/app-*/N on a
cluster), where a relative path names nothing.  test_hunt18_sparkcluster_executor_env.py runs it on a
local-cluster master."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.spark.stream_options import SinkOptions, SourceOptions

pytestmark = pytest.mark.spark

FILES = {"tls.client.trustCertPath": "certs/ca.pem", "tls.client.certPath": "certs/me.pem",
         "tls.client.keyPath": "~/me.key"}


@pytest.mark.parametrize("parse", [lambda o: SourceOptions.parse(o, streaming=True), SinkOptions.parse],
                         ids=["source", "sink"])
def test_relative_tls_files_become_absolute_against_the_planning_directory(
        parse: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    options = {"nameServer": "127.0.0.1:9876", "subscribe": "T", "topic": "T", **FILES}
    tls = parse(options).tls  # type: ignore[operator]
    assert tls.client_trust_cert_path == str(tmp_path / "certs" / "ca.pem")
    assert tls.client_cert_path == str(tmp_path / "certs" / "me.pem")
    assert tls.client_key_path == str(Path.home() / "me.key")
