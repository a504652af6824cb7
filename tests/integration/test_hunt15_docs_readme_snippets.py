"""The README's Python blocks, run as a newcomer runs them: each block's own text, with only the name server's
address (127.0.0.1:9876) pointed at an in-process cluster and, where a block leaves its application's
pieces to the reader (``save(order)``, ``price_of(...)``, the ``replier``), those few names given.  Blocks
with a top-level ``await`` / ``async with`` run as written through the compiler's top-level-await mode;
the C++ client's block and the blocking push consumer's (which waits for Enter) run in their own process.

The first block (the embedded store) is run by tests/unit/cli/test_readme_commands.py.  Every other block
must be run here: a block added to the README without a test fails ``test_every_readme_python_block_is_run``.
"""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, pull_all, run_within

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.client import Producer, PushConsumer

README = Path(__file__).resolve().parents[2] / "README.md"
DEFAULT_NAMESRV = "127.0.0.1:9876"

#: the text that tells each block apart, and the test that runs it
BLOCK_MARKERS = {
    "store.wait_dispatched()": "tests/unit/cli/test_readme_commands.py",
    "read_only=True": "test_the_read_only_open_block_changes_no_byte",
    "from rocketmq.client import": "test_the_cpp_client_block_sends_hello",
    "BlockingPushConsumer(": "test_the_blocking_push_consumer_block_prints_and_stops_on_enter",
    "TransactionProducer(": "test_the_transaction_block_commits_the_order",
    "RequestProducer(": "test_the_request_reply_block_gets_the_reply",
}


def python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    blocks = []
    for part in text.split("```python\n")[1:]:
        blocks.append(part[:part.index("```")])
    return blocks


def block_with(marker: str) -> str:
    found = [b for b in python_blocks() if marker in b]
    assert len(found) == 1, f"{len(found)} README python blocks contain {marker!r}"
    return found[0]


def pointed_at(code: str, namesrv: str) -> str:
    assert DEFAULT_NAMESRV in code, "the block no longer names the default name server"
    return code.replace(DEFAULT_NAMESRV, namesrv)


async def run_block(code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute *code* (which may ``await`` at top level) in *namespace* on the running loop."""
    compiled = compile(code, "<README block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)  # the README's own text, run as a reader would
    if asyncio.iscoroutine(result):
        await result
    return namespace


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with LocalCluster(tmp_path_factory.mktemp("readme") / "store") as c:
        yield c


def test_every_readme_python_block_is_run() -> None:
    blocks = python_blocks()
    unclaimed = [b.splitlines()[0] for b in blocks if not any(m in b for m in BLOCK_MARKERS)]
    assert not unclaimed, f"README python blocks no test runs (add one to {Path(__file__).name}): {unclaimed}"
    for marker in BLOCK_MARKERS:
        block_with(marker)


def test_the_read_only_open_block_changes_no_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  tree_snapshot: Any) -> None:
    """Run after the first block, as a reader does, in the same directory: it opens the store that block
    wrote (64 MiB segments) and leaves every byte as it was."""
    monkeypatch.chdir(tmp_path)
    with MessageStore.open("./mystore", StoreConfig(mapped_file_size_commit_log=64 << 20)) as store:
        store.put(Message.create("TopicA", b"hello", tags="TagA"))
    before = tree_snapshot(tmp_path / "mystore")
    namespace = {"Message": Message, "MessageStore": MessageStore, "StoreConfig": StoreConfig}  # the first block's
    run_within(lambda: run_block(block_with("read_only=True"), namespace), 20.0)
    assert namespace["store"].max_commit_log_offset > 0  # it saw the message
    assert tree_snapshot(tmp_path / "mystore") == before


def test_the_cpp_client_block_sends_hello(cluster: LocalCluster, tmp_path: Path) -> None:
    pytest.importorskip("rocketmq.client", reason="the official C++ client (pip install rocketmq==0.4.4)")
    script = tmp_path / "cpp_block.py"
    script.write_text(pointed_at(block_with("from rocketmq.client import"), cluster.namesrv_addr), encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path)}  # the C++ client logs under $HOME/logs
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0"  # SendStatus.OK, an IntEnum
    deadline = time.monotonic() + 20.0  # the consume queue is written a moment after the send is answered
    while not (hello := [m for m in pull_all(cluster.namesrv_addr, "TopicA") if m.body == b"hello"]):
        assert time.monotonic() < deadline, "the C++ client's hello never reached its queue"
        time.sleep(0.05)
    assert [(m.tags, m.keys) for m in hello] == [("TagA", "order-1")]


def _read_lines(stream: Any, lines: list[str], seen: threading.Event) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))
        seen.set()


def test_the_blocking_push_consumer_block_prints_and_stops_on_enter(cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.create_topic("TopicA", 4)
    script = tmp_path / "push_block.py"
    script.write_text(pointed_at(block_with("BlockingPushConsumer("), cluster.namesrv_addr), encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-u", str(script)], cwd=tmp_path, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    seen = threading.Event()
    reader = threading.Thread(target=_read_lines, args=(child.stdout, lines, seen), daemon=True)
    reader.start()
    try:
        def wait_for(what: str, pred: Any) -> None:
            deadline = time.monotonic() + 30.0
            while not any(pred(line) for line in list(lines)):
                assert child.poll() is None, f"the block exited early: {lines}"
                assert time.monotonic() < deadline, f"timed out waiting for {what}: {lines}"
                seen.wait(0.2)
                seen.clear()

        wait_for("the prompt", lambda line: line == "consuming; press Enter to stop")

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "readme-push-producer") as producer:
                for tags in ("TagA", "TagC"):  # TagC is outside the block's subscription
                    await producer.send("TopicA", f"push block {tags}".encode(), tags=tags)

        run_within(send, 20.0)
        wait_for("the handled message", lambda line: line.startswith("TopicA ") and "b'push block TagA'" in line)
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=30) == 0, lines
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(5)
    handled = [line for line in lines if line.startswith("TopicA ")]
    assert not [line for line in handled if "TagC" in line]
    topic, queue_id, queue_offset, tags = next(line for line in handled if "push block TagA" in line).split()[:4]
    assert (topic, tags) == ("TopicA", "TagA") and queue_id.isdigit() and queue_offset.isdigit()


def test_the_transaction_block_commits_the_order(cluster: LocalCluster) -> None:
    saved_orders: list[Any] = []
    order = {"id": 7}
    namespace: dict[str, Any] = {
        "save": saved_orders.append,
        "saved": lambda transaction_id: transaction_id is not None,
        "order": order,
    }
    code = pointed_at(block_with("TransactionProducer("), cluster.namesrv_addr)
    run_within(lambda: run_block(code, namespace), 30.0)
    assert saved_orders == [order]
    deadline = time.monotonic() + 20.0  # END_TRANSACTION goes oneway: the commit lands a moment later
    while not (committed := [m for m in pull_all(cluster.namesrv_addr, "Orders") if m.body == b"order 7"]):
        assert time.monotonic() < deadline, "the committed order never reached its topic"
        time.sleep(0.05)
    assert len(committed) == 1


def test_the_request_reply_block_gets_the_reply(cluster: LocalCluster) -> None:
    """The block's serving half (``handle``) runs in a push consumer with its own imports only; the
    requesting half then runs as written and gets the answer."""
    cluster.create_topic("PriceQuery", 2)
    code = pointed_at(block_with("RequestProducer("), cluster.namesrv_addr)
    request_half, serving_half = code.split("async def handle", 1)
    imports = "\n".join(line for line in request_half.splitlines() if line.startswith(("from ", "import ")))
    namespace: dict[str, Any] = {"price_of": lambda body: b"price of " + bytes(body)}
    answers: list[Any] = []

    async def handle(messages: Any) -> Any:  # the block's handle, its answer (or exception) kept
        try:
            answers.append(await namespace["handle"](messages))
        except Exception as exc:
            answers.append(exc)
            raise
        return answers[-1]

    async def go() -> Any:
        await run_block(imports + "\n\nasync def handle" + serving_half, namespace)
        async with Producer(cluster.namesrv_addr, "rpc-server-replier") as replier, \
                PushConsumer(cluster.namesrv_addr, "rpc-server", {"PriceQuery": "*"}, handle):
            namespace["replier"] = replier
            await run_block(request_half, namespace)
        return namespace["reply"]

    reply = run_within(go, 40.0)
    assert reply.body == b"price of sku-7"
    assert [str(a) for a in answers] == ["CONSUME_SUCCESS"]
