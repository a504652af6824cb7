"""The ``rocketmq`` sink and source against a TLS-enforcing broker: Spark's Python workers are fresh processes
(nothing the driver's script sets up reaches them), so the options useTLS / tls.client.* carry the clients'
TLS, the files they name opened by every task.  The broker runs in a ``rocketstore serve`` subprocess
(tls.server.mode=enforcing)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from certs import self_signed
from serve_process import ServeProcess, write_broker_conf

pytestmark = pytest.mark.spark

TOPIC = "SparkTls"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, str]]:
    base = tmp_path_factory.mktemp("serve")
    cert, key = self_signed(base, "server")
    tls_file = base / "tls.properties"
    tls_file.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
                        "tls.enable=true\n")
    with ServeProcess(base / "store", write_broker_conf(base / "broker.conf"),
                      extra_args=("--tls-config", str(tls_file))) as process:
        yield process, str(cert)


def test_sink_and_source_reach_an_enforcing_broker_through_the_tls_options(spark: Any,
                                                                            serve: tuple[ServeProcess, str]) -> None:
    process, server_cert = serve
    ns = process.namesrv_addr
    rows = spark.createDataFrame([(f"tls-{i}".encode(),) for i in range(10)], "body binary").repartition(2)
    rows.write.format("rocketmq").option("nameServer", ns).option("topic", TOPIC).option("useTLS", "true") \
        .mode("append").save()
    back = (spark.read.format("rocketmq").option("nameServer", ns).option("subscribe", TOPIC)
            .option("tls.client.authServer", "true").option("tls.client.trustCertPath", server_cert)
            .load().select("body").collect())
    assert sorted(bytes(r["body"]) for r in back) == sorted(f"tls-{i}".encode() for i in range(10))
    with pytest.raises(Exception, match="closed|TLS"):  # without the options: plain, and refused
        rows.write.format("rocketmq").option("nameServer", ns).option("topic", TOPIC) \
            .option("timeoutMs", "2000").option("fetchOffset.numRetries", "0").mode("append").save()
