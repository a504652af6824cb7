"""The ACL files' watch (broker/acl.py, PlainAcl.start_watch): RocketMQ 4.9.3's AclFileWatchService is a
thread of its own that looks at the files whether requests come or not, so an edit takes effect on an idle
broker too; and a rewrite that keeps the file's size and timestamp (two writes within the file system's
timestamp step) is still a change, since the bytes are compared as well."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from rocketstore.broker.acl import DENY, PUB, SUB, PlainAcl

ACL = """\
accounts:
  - accessKey: rocketstore-app
    secretKey: s3cret-key-1
    defaultTopicPerm: DENY
    topicPerms:
      - topicA={perm}
"""


def _home(tmp_path: Path, perm: str) -> Path:
    (tmp_path / "conf").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "plain_acl.yml").write_text(ACL.format(perm=perm), encoding="utf-8")
    return tmp_path


def _perm(acl: PlainAcl) -> int:
    perms = acl.config.accounts["rocketstore-app"].perms
    assert perms is not None
    return perms["topicA"]


def _rewrite_keeping_size_and_mtime(path: Path, text: str) -> None:
    before = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_rewrite_that_keeps_size_and_mtime_is_a_change(tmp_path: Path) -> None:
    home = _home(tmp_path, "PUB")
    acl = PlainAcl(home)
    assert _perm(acl) == PUB
    _rewrite_keeping_size_and_mtime(home / "conf" / "plain_acl.yml", ACL.format(perm="SUB"))
    assert acl.reload_if_changed() is True
    assert _perm(acl) == SUB
    assert acl.reload_if_changed() is False  # nothing changed since


def _watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "AclFileWatch"]


def test_the_watch_reloads_without_any_request_and_ends_on_stop(tmp_path: Path) -> None:
    home = _home(tmp_path, "PUB")
    acl = PlainAcl(home)
    acl.start_watch(interval_s=0.01)
    acl.start_watch(interval_s=0.01)  # idempotent: still one thread
    try:
        assert len(_watch_threads()) == 1
        _rewrite_keeping_size_and_mtime(home / "conf" / "plain_acl.yml", ACL.format(perm="SUB"))
        deadline = time.monotonic() + 30
        while _perm(acl) != SUB:  # no check() is called: only the watch can have read the file
            assert time.monotonic() < deadline, "the watch never reloaded the edited file"
            time.sleep(0.01)
    finally:
        acl.stop_watch()
    assert _watch_threads() == []
    acl.stop_watch()  # idempotent
    # stopped: an edit now waits for the next look (a request's, at most once a second)
    (home / "conf" / "plain_acl.yml").write_text(ACL.format(perm="DENY"), encoding="utf-8")
    assert _perm(acl) == SUB
    assert acl.reload_if_changed() is True
    assert _perm(acl) == DENY
