"""docs/metrics.md, docs/trace.md and docs/tls.md run as a reader runs them: their ``rocketstore ...`` lines
and Python blocks, each block's own text, against a real name server and broker on 127.0.0.1.

What is changed in the text, and why:

* the name server's address (``127.0.0.1:9876``, ``ns:9876``) is pointed at the test's; a line that names
  none (``rocketstore exporter -c DefaultCluster ...``, ``rocketstore trace ID ...``) gets it the way a user
  gives it, through ``ROCKETSTORE_NAMESRV``;
* a fixed port a server would listen on (the exporter's 5557 and 9100, the name server's 9876) becomes 0, so
  that the test does not depend on a free well-known port; the server says which one it got;
* a message id the page makes up (``7F00...``, ``ID``) becomes the id of a message the test traced;
* the certificate paths of docs/tls.md (``/etc/rocketmq/...``) become certificates made for the test
  (tests/integration/certs.py).

Blocks that leave their application's pieces to the reader (trace.md's ``namesrv``, ``handle`` and ``check``;
tls.md's ``NameServer``, ``Broker``, ``broker_config`` and ``store_config``) get those names given, as
test_hunt15_docs_readme_snippets.py gives the README's.  docs/spark.md's blocks run in
tests/spark/test_hunt15_docs_spark_snippets.py; every block's test is listed in
tests/unit/cli/test_hunt16_docs2_doc_commands.py."""

from __future__ import annotations

import ast
import asyncio
import json
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from certs import self_signed
from local_cluster import LocalCluster, eventually, run_within
from serve_process import SMALL_STORE_CONF, ServeProcess, env, wait_for

from rocketstore.cli.main import main
from rocketstore.client import ConsumeStatus, Producer
from rocketstore.remoting.tls import client_context_default, use_client_tls

DOCS = Path(__file__).resolve().parents[2] / "docs"
DEFAULT_NAMESRV = "127.0.0.1:9876"


def page_blocks(page: str, *languages: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    found = []
    for language in languages:
        for part in text.split(f"```{language}\n")[1:]:
            found.append(part[:part.index("```")])
    return found


def python_block(page: str, marker: str) -> str:
    [block] = [b for b in page_blocks(page, "python") if marker in b]
    return block


def command_lines(page: str) -> list[list[str]]:
    """The words of each ``rocketstore`` line of *page*'s shell blocks (``\\`` continuations joined)."""
    lines = []
    for block in page_blocks(page, "sh", "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("rocketstore "):
                lines.append(shlex.split(line, comments=True))
    return lines


async def run_block(code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute *code* (which may ``await`` at top level) in *namespace* on the running loop."""
    compiled = compile(code, "<docs block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)  # the page's own text, run as a reader would
    if asyncio.iscoroutine(result):
        await result
    return namespace


def cli(capsys: pytest.CaptureFixture[str], words: list[str]) -> str:
    """stdout of ``rocketstore WORDS`` (in process), which must succeed."""
    assert words[0] == "rocketstore"
    status = main(words[1:])
    out = capsys.readouterr()
    assert status == 0, out.err
    return out.out


@pytest.fixture(autouse=True)
def plain_process() -> Any:
    """``--tls-config`` run in process (``main``) turns TLS on for the whole process, as it does for the one
    command a shell runs; each test starts and ends with plain connections."""
    use_client_tls(None)
    yield
    use_client_tls(None)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("docs2") / "store") as c:
        c.create_topic("Orders", 2)
        yield c


# --- docs/metrics.md -------------------------------------------------------------------------------------

def test_the_exporter_once_line_prints_a_collection(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    [line] = [w for w in command_lines("metrics.md") if "--once" in w]
    words = [cluster.namesrv_addr if w == DEFAULT_NAMESRV else w for w in line]
    text = cli(capsys, words)
    assert re.search(r'^rocketmq_brokeruntime_commitlog_maxoffset\{cluster="DefaultCluster",.*brokerHost="broker-a"',
                     text, re.MULTILINE), text
    samples = json.loads(cli(capsys, [*words, "--json"]))  # the line's comment: "--json: as samples"
    assert {"name", "labels", "value"} == set(samples[0])
    assert any(s["name"] == "rocketmq_producer_offset" and s["labels"]["topic"] == "Orders" for s in samples)


def _serve_exporter(words: list[str], namesrv: str) -> None:
    """Run a serving ``rocketstore exporter`` line in its own process, scrape it once, stop it with Ctrl-C."""
    child = subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", *words[1:]], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**env(), "ROCKETSTORE_NAMESRV": namesrv})
    lines: queue.Queue[str] = queue.Queue()
    stdout = child.stdout
    assert stdout is not None
    threading.Thread(target=lambda: [lines.put(x) for x in stdout], daemon=True).start()
    try:
        first = lines.get(timeout=60)
        url = re.fullmatch(r"exporter: (http://\S+/metrics) \(name server .*\)\n", first)
        assert url, first
        port = url.group(1).rsplit(":", 1)[1].split("/")[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            assert answer.status == 200
            text = answer.read().decode()
        assert 'rocketmq_brokeruntime_commitlog_maxoffset{cluster="DefaultCluster"' in text, text
        child.send_signal(signal.SIGINT)  # Ctrl-C
        assert child.wait(30) == 0, child.stderr.read() if child.stderr else ""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_exporter_serving_lines_serve_until_ctrl_c(cluster: LocalCluster) -> None:
    serving = [w for w in command_lines("metrics.md") if "--once" not in w]
    assert len(serving) == 2
    for line in serving:
        words = [cluster.namesrv_addr if w == DEFAULT_NAMESRV else w for w in line]
        if "--port" in words:
            words[words.index("--port") + 1] = "0"
        else:
            words += ["--port", "0"]  # 5557, the default, may be taken on the test host
        _serve_exporter(words, cluster.namesrv_addr)


# --- docs/trace.md ---------------------------------------------------------------------------------------

def test_the_trace_block_and_commands_show_a_messages_trace(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The block's traced producer sends an order, its traced consumer handles it and its traced transaction
    producer commits one; then the page's ``rocketstore trace`` lines show their stories."""
    handled: list[bytes] = []

    async def handle(messages: Any) -> ConsumeStatus:
        handled.extend(bytes(m.body) for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    def check(message: Any) -> Any:
        raise AssertionError("no transaction is left undecided")

    from rocketstore.client import LocalTransactionState

    namespace: dict[str, Any] = {"namesrv": cluster.namesrv_addr, "handle": handle, "check": check}

    async def go() -> tuple[str, str, str]:
        await run_block(python_block("trace.md", "enable_trace=True"), namespace)
        producer, consumer, tx = namespace["producer"], namespace["consumer"], namespace["tx"]
        async with producer, consumer, tx:
            sent = await producer.send("Orders", b"traced order", tags="TagA", keys="order-9")
            await eventually(lambda: b"traced order" in handled, 30.0, "the consumer handling the order")
            committed = await tx.send_in_transaction(
                "Orders", b"traced tx", lambda message, arg: LocalTransactionState.COMMIT_MESSAGE)
        # `trace_topic="MyTrace"` sends to another topic
        async with Producer(cluster.namesrv_addr, "my-trace-producer", enable_trace=True,
                            trace_topic="MyTrace") as own:
            mine = await own.send("Orders", b"traced to MyTrace")
        return sent.msg_id, committed.msg_id, mine.msg_id

    sent_id, tx_id, mine_id = run_within(go, 60.0)
    monkeypatch.setenv("ROCKETSTORE_NAMESRV", cluster.namesrv_addr)
    lines = command_lines("trace.md")
    example = "7F0000010B5A18B4AAC2733E33A00000"

    def traced(words: list[str], msg_id: str, *wanted: str) -> str:
        words = [msg_id if w in (example, "ID") else w for w in words]

        def read() -> str | None:  # the trace producers send in the background: the records come a moment later
            out = cli(capsys, words)
            return out if all(w in out for w in wanted) else None

        return str(wait_for(read, 30.0, f"{wanted} in {words}", interval_s=0.2))

    table = traced(lines[0], sent_id, "order-producer", "order-consumer")
    rows = [line.split() for line in table.splitlines() if line.startswith(("Pub ", "Sub "))]
    assert [(row[0], row[1], row[-1]) for row in rows] == [("Pub", "order-producer", "success"),
                                                            ("Sub", "order-consumer", "success")], table
    records = json.loads(traced(lines[1], sent_id, '"SubBefore"', '"SubAfter"'))["traces"]
    assert {r["type"] for r in records} == {"Pub", "SubBefore", "SubAfter"}, records
    records = json.loads(traced(lines[1], tx_id, '"EndTransaction"'))["traces"]
    assert {r["type"] for r in records} >= {"Pub", "EndTransaction"}, records  # and its consumer's, once committed
    assert "my-trace-producer" in traced(lines[2], mine_id, "my-trace-producer")


# --- docs/tls.md -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The page's tls.properties with its certificate paths pointed at certificates made here, in enforcing
    mode (one of the modes its comment lists) so that a client that did not use TLS would be refused; and a
    client-tls.properties with ``tls.enable=true``, as the page's comment says, that also checks the server's
    certificate against the one made here (``tls.client.*``)."""
    directory = tmp_path_factory.mktemp("docs2-tls")
    cert, key = self_signed(directory, "server")
    [properties] = page_blocks("tls.md", "properties")
    assert "tls.server.mode=permissive\n" in properties
    text = (properties.replace("/etc/rocketmq/server.crt", cert).replace("/etc/rocketmq/server.key", key)
            .replace("tls.server.mode=permissive\n", "tls.server.mode=enforcing\n"))
    (directory / "tls.properties").write_text(text, encoding="utf-8")
    (directory / "client-tls.properties").write_text(
        f"tls.enable=true\ntls.client.authServer=true\ntls.client.trustCertPath={cert}\n", encoding="utf-8")
    return {"dir": directory, "cert": Path(cert), "tls": directory / "tls.properties",
            "client": directory / "client-tls.properties"}


def _start(words: list[str], cwd: Path, pattern: str) -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", *words[1:]], cwd=cwd, env=env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    found = re.search(pattern, line)
    if not found:
        child.kill()
        raise AssertionError(f"{words} printed {line!r}; stderr {child.communicate(timeout=10)[1][-2000:]}")
    return child, found.group(1)


def _stop(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_the_tls_commands_serve_and_list_over_tls(tls_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``namesrv`` and ``broker -c broker.conf`` with the page's file (the broker registering over TLS, since
    the file has ``tls.enable=true``), then ``topic list --tls-config client-tls.properties`` against them;
    ``serve --store ./store`` with the same file, and the client line against it."""
    lines = {tuple(w[:2]): w for w in command_lines("tls.md")}
    cwd = tls_files["dir"]
    namesrv_words = [*lines[("rocketstore", "namesrv")], "-p", "0"]  # the default, 9876, may be taken
    namesrv, namesrv_addr = _start(namesrv_words, cwd, r"listening on (127\.0\.0\.1:\d+)")
    broker = None
    try:
        conf = {**SMALL_STORE_CONF, "brokerName": "broker-tls", "namesrvAddr": namesrv_addr, "listenPort": 0,
                "storePathRootDir": str(cwd / "broker-store")}
        (cwd / "broker.conf").write_text("".join(f"{k}={v}\n" for k, v in conf.items()), encoding="utf-8")
        broker, _ = _start(lines[("rocketstore", "broker")], cwd, r"listening on (127\.0\.0\.1:\d+)")
        client = [*lines[("rocketstore", "topic")], "-n", namesrv_addr, "--json"]
        monkeypatch.chdir(cwd)  # the page's relative file names

        def listed() -> bool:
            status = main(client[1:])
            out = capsys.readouterr()
            assert status == 0, out.err
            return "broker-tls" in out.out  # the broker's own topic, named after it, is routed

        wait_for(listed, 30.0, "the TLS broker's topics", interval_s=0.2)
        use_client_tls(None)  # a command run without the file, as from a shell of its own
        plain = main(["topic", "list", "-n", namesrv_addr])  # the server is enforcing: a plain client is refused
        assert plain != 0, capsys.readouterr()
        capsys.readouterr()
    finally:
        if broker is not None:
            _stop(broker)
        _stop(namesrv)

    [serve_line] = [w for w in command_lines("tls.md") if w[1] == "serve"]
    assert serve_line[2:4] == ["--store", "./store"]
    with ServeProcess(cwd / "store", extra_args=tuple(serve_line[4:])) as served:  # run in cwd (chdir above)
        assert main([*lines[("rocketstore", "topic")][1:], "-n", served.namesrv_addr]) == 0, capsys.readouterr().err
        assert "TBW102" in capsys.readouterr().out


def test_the_per_client_tls_block_connects_checking_the_server(tls_files: dict[str, Path]) -> None:
    """The ``tls=`` block against a TLS cluster: the checking producer trusts the server's certificate (the
    page's ca.crt), and the ``tls=True`` consumer connects without checking."""
    from rocketstore.remoting.tls import TlsConfig

    server = TlsConfig.from_file(str(tls_files["tls"]))
    with LocalCluster(tls_files["dir"] / "per-client-store", tls=server) as tls_cluster:
        code = (python_block("tls.md", "client_trust_cert_path=")
                .replace("/etc/rocketmq/ca.crt", str(tls_files["cert"])).replace("ns:9876", tls_cluster.namesrv_addr))
        # the reader's work in place of the block's `...`: a send, and the queues the send created
        assert code.count("as producer: ...") == 1 and code.count("as consumer: ...") == 1
        code = (code.replace("as producer: ...", "as producer: sent = await producer.send('TopicTls', b'over tls')")
                .replace("as consumer: ...", "as consumer: queues = await consumer.queues('TopicTls')"))
        namespace: dict[str, Any] = {}
        run_within(lambda: run_block(code, namespace), 40.0)
        assert namespace["sent"].status == "SEND_OK" and namespace["queues"]


def test_the_from_python_block_sets_the_process_and_builds_servers(tls_files: dict[str, Path],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The "From Python" block, in the directory holding its two files; ``NameServer`` and ``Broker`` are the
    classes of the same names, ``broker_config`` / ``store_config`` the reader's."""
    from rocketstore.broker import Broker, BrokerConfig
    from rocketstore.namesrv import NameServer
    from rocketstore.store.config import StoreConfig

    monkeypatch.chdir(tls_files["dir"])
    namespace: dict[str, Any] = {
        "NameServer": NameServer, "Broker": Broker, "broker_config": BrokerConfig(),
        "store_config": StoreConfig(store_path_root_dir=str(tls_files["dir"] / "from-python-store"))}
    try:
        exec(compile(python_block("tls.md", "NameServer(tls=server_tls)"), "<docs/tls.md block>", "exec"),  # noqa: S102
             namespace)
        assert client_context_default() is not None  # the second use_client_tls: its file has tls.enable=true
    finally:
        use_client_tls(None)
