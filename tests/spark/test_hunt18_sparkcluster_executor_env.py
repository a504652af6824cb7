"""What a cluster's executors do not share with the driver, on Spark's ``local-cluster[2,1,1024]`` master
(executor JVMs of their own, their Python workers in SPARK_HOME/work/app-*/N):

* the working directory: a relative ``tls.client.trustCertPath`` given to the ``rocketmq`` sink and source
  must reach the executors absolute (resolved where planning runs), as the store source's ``path`` does;
* the Python interpreter: ``build_session`` (behind ``rocketstore pipeline --conf``) must start the executors'
  Python workers with ``spark.pyspark.python`` when it is given, as spark-submit does, not with the driver's
  own interpreter (pyspark alone ignores the property in a running Python process).

SLOW ON PURPOSE (marked slow): one driver subprocess starts the cluster once and runs both checks; the broker
enforces TLS (``rocketstore serve`` subprocess).  The interpreter named by spark.pyspark.python is a wrapper
script that notes each start in a file, then runs this interpreter.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from certs import self_signed
from serve_process import ServeProcess, write_broker_conf
from test_hunt15_sparkcluster_local_cluster import _spark_home

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TOPIC, COUNT = "ClusterTls", 12

DRIVER = textwrap.dedent('''
    import json, sys
    from rocketstore.spark.jobs import build_session

    namesrv, python, result_path, topic = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    out = {}
    spark, _ = build_session("local-cluster[2,1,1024]", "hunt18-cluster-env", {
        "spark.pyspark.python": python, "spark.ui.enabled": "false", "spark.driver.memory": "512m",
        "spark.executor.memory": "512m", "spark.sql.shuffle.partitions": "2"})
    tls = {"tls.client.authServer": "true", "tls.client.trustCertPath": "ca.crt"}  # relative to the driver
    rows = spark.createDataFrame([(f"tls-{i}".encode(),) for i in range(@COUNT@)], "body binary").repartition(2)
    try:
        rows.write.format("rocketmq").option("nameServer", namesrv).option("topic", topic).options(**tls) \\
            .option("fetchOffset.numRetries", "0").mode("append").save()
        out["written"] = True
    except Exception as exc:
        out["written"] = [line for line in str(exc).splitlines() if "Error" in line][-1:]
    try:
        back = (spark.read.format("rocketmq").option("nameServer", namesrv).option("subscribe", topic)
                .options(**tls).load().select("body").collect())
        out["read"] = sorted(bytes(r[0]).decode() for r in back)
    except Exception as exc:
        out["read"] = [line for line in str(exc).splitlines() if "Error" in line][-1:]
    spark.stop()
    with open(result_path, "w") as f:
        json.dump(out, f)
''').replace("@COUNT@", str(COUNT))


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, str]]:
    base = tmp_path_factory.mktemp("serve")
    cert, key = self_signed(base, "server")
    tls_file = base / "tls.properties"
    tls_file.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
                        "tls.enable=true\n")
    with ServeProcess(base / "store", write_broker_conf(base / "broker.conf"),
                      extra_args=("--tls-config", str(tls_file))) as process:
        yield process, cert


@pytest.fixture(scope="module")
def seen(serve: tuple[ServeProcess, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    process, cert = serve
    work = tmp_path_factory.mktemp("cluster-env")
    (work / "ca.crt").write_bytes(Path(cert).read_bytes())
    starts = work / "python-starts"
    python = work / "python-wrapper"
    python.write_text(f'#!/bin/sh\necho "$PWD" >> "{starts}"\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    import rocketstore

    src = str(Path(rocketstore.__file__).resolve().parents[1])
    env = dict(os.environ, SPARK_HOME=str(_spark_home(work / "spark-home")),
               PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    env.pop("PYSPARK_PYTHON", None)  # build_session picks it: the property, else the driver's interpreter
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")
    result, log = work / "seen.json", work / "driver.log"
    # a second try when the first driver fails: a local-cluster start can fail for the machine's reasons (a
    # busy host, ports); the outcome checked is the same either way
    for attempt in range(2):
        result.unlink(missing_ok=True)
        starts.unlink(missing_ok=True)
        with log.open("w") as output:
            proc = subprocess.Popen([sys.executable, "driver.py", process.namesrv_addr, str(python), str(result),
                                     f"{TOPIC}{attempt}"],
                                    cwd=work, env=env, stdout=output, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=240)  # a deadline for a hung cluster, not a speed limit
            except subprocess.TimeoutExpired:
                code = None
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        if code == 0 and result.exists():
            break
    if code != 0 or not result.exists():
        tail = log.read_text(errors="replace")[-6000:]
        if "local-cluster" in tail and ("Exception in thread" in tail or "Cannot run" in tail):
            pytest.skip(f"Spark's local-cluster master did not start here: {tail[-600:]}")
        pytest.fail(f"the local-cluster driver failed (exit {code}):\n{tail}")
    data: dict[str, Any] = json.loads(result.read_text())
    data["starts"] = starts.read_text().split() if starts.exists() else []
    return data


def test_a_relative_trust_cert_path_reaches_the_executors(seen: dict[str, Any]) -> None:
    assert seen["written"] is True
    assert seen["read"] == sorted(f"tls-{i}" for i in range(COUNT))


def test_spark_pyspark_python_runs_the_executors_python_workers(seen: dict[str, Any]) -> None:
    executor_starts = [d for d in seen["starts"] if "/work/app-" in d]
    assert executor_starts, seen["starts"]  # the executors' Python workers started through the property's path
