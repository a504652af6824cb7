"""A library store out of descriptors (a low RLIMIT_NOFILE, many queues): the refused put says why.

Dispatch meets EMFILE opening the consume-queue files of new queues; the store then refuses puts with
SERVICE_NOT_AVAILABLE until it can write them again.  The refusal's remark names the cause (the consume queues
or index, and the errno's words), puts resume once descriptors are back, and every message a put took is
there after a reopen.  Run in a child process: the limit is the process's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r'''
import json, os, resource, sys, time
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

root, queues = sys.argv[1], 300
config = StoreConfig(mapped_file_size_commit_log=1 << 22, mapped_file_size_consume_queue=6000,
                     preallocate_commit_log=False, warm_ahead_bytes=0, max_hash_slot_num=100,
                     max_index_num=400)
store = MessageStore.open(root, config)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 60, hard))
taken = {}
refused = None

def put(topic, body):
    global refused
    result = store.put(Message(topic=topic, queue_id=0, body=body))
    if result.ok:
        taken[topic] = taken.get(topic, 0) + 1
    elif refused is None:
        refused = (result.status.name, result.remark)
    return result.ok

for q in range(queues):
    put(f"F{q}", b"m%d" % q)
deadline = time.monotonic() + 60
while refused is None and time.monotonic() < deadline:  # dispatch runs behind the puts
    put("F0", b"more")
    time.sleep(0.01)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
resumed = False
deadline = time.monotonic() + 60
while not resumed and time.monotonic() < deadline:
    resumed = put("F0", b"again")
    time.sleep(0.05)
store.close()
store = MessageStore.open(root, config, background=False)
found = {t: len(store.get(t, 0, 0, 1000).messages) for t in taken}
store.close()
print(json.dumps({"refused": refused, "resumed": resumed, "taken": taken, "found": found}))
'''


def test_a_put_refused_for_want_of_descriptors_names_the_cause(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "store")], capture_output=True,
                         text=True, env=env, timeout=180)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    status, remark = report["refused"]
    assert status == "SERVICE_NOT_AVAILABLE"
    assert "consume queues or index cannot be written" in remark and os.strerror(24) in remark, remark
    assert report["resumed"]
    assert report["found"] == report["taken"] and len(report["taken"]) == 300
