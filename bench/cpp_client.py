"""The official C++ RocketMQ client (PyPI ``rocketmq``, librocketmq) as a bench side: a ``send_sync`` loop in a
subprocess (:data:`_CPP_SCRIPT`), timed inside that process, against our broker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = ["cpp_client_available", "cpp_send_rate"]

_CPP_SCRIPT = r"""
import json, os, sys, time
try:
    from rocketmq.client import Message, Producer
    namesrv, topic, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    p = Producer("bench-cpp-producer")
    p.set_namesrv_addr(namesrv)
    p.start()
    body = "x" * size
    def one():
        m = Message(topic)
        m.set_tags("TagA")
        m.set_body(body)
        r = p.send_sync(m)
        if r.status.name != "OK":
            raise RuntimeError(r.status.name)
    for _ in range(20):
        one()
    t0 = time.perf_counter()
    for _ in range(n):
        one()
    print(json.dumps({"rate": n / (time.perf_counter() - t0)}), flush=True)
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
os._exit(0)
"""


def cpp_client_available() -> bool:
    try:
        out = subprocess.run([sys.executable, "-c", "import rocketmq.client"], capture_output=True, timeout=60,
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


def cpp_send_rate(workdir: str, namesrv: str, topic: str, n: int, body_bytes: int) -> float:
    script = os.path.join(workdir, "cpp_send.py")
    if not os.path.exists(script):
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(_CPP_SCRIPT)
    home = os.path.join(workdir, "cpp-home")  # the C++ client logs under $HOME/logs
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home)
    proc = subprocess.run([sys.executable, script, namesrv, topic, str(n), str(body_bytes)], capture_output=True,
                          text=True, timeout=120 + n / 100, env=env, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            out = json.loads(line)
            if "rate" in out:
                return float(out["rate"])
            raise RuntimeError(f"C++ client: {out.get('error')}")
    raise RuntimeError(f"C++ client said nothing (exit {proc.returncode}): {proc.stderr[-500:]}")

