"""``rocketstore serve --metrics-port`` on a broker with aclEnable=true: its exporter signed nothing, so the
broker refused every admin request it made and each scrape was nearly empty (23 scrape errors a collection,
an "ACL refused" line per request; found by session 29's adversarial pass).  It now signs with the account
in ROCKETSTORE_ACCESS_KEY / ROCKETSTORE_SECRET_KEY, as ``rocketstore exporter`` and the client commands do,
and without one a warning at start says why the scrapes are empty."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
from local_cluster import acl_home
from serve_process import ServeProcess, write_broker_conf

PLAIN_ACL_YML = """\
accounts:
  - accessKey: hunt29-metrics-admin
    secretKey: hunt29-metrics-secret
    admin: true
"""


def _scrape(serve: ServeProcess) -> str:
    url = re.search(r"metrics on (http://\S+/metrics)", serve.first_line)
    assert url, serve.first_line
    with urllib.request.urlopen(url.group(1), timeout=30) as response:
        return response.read().decode()


def _errors(text: str) -> float:
    [value] = re.findall(r"^rocketstore_exporter_scrape_errors(?:\{[^}]*\})? (\S+)$", text, re.MULTILINE)
    return float(value)


def _serve(tmp_path: Path) -> ServeProcess:
    home = acl_home(tmp_path / "home", PLAIN_ACL_YML)
    conf = write_broker_conf(tmp_path / "broker.conf", aclEnable="true", rocketmqHome=str(home))
    return ServeProcess(tmp_path / "store", conf, extra_args=("--metrics-port", "0"))


def test_the_built_in_exporter_signs_with_the_environments_account(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETSTORE_ACCESS_KEY", "hunt29-metrics-admin")
    monkeypatch.setenv("ROCKETSTORE_SECRET_KEY", "hunt29-metrics-secret")
    with _serve(tmp_path) as serve:
        text = _scrape(serve)
        assert _errors(text) == 0, text
        assert re.search(r"^rocketmq_brokeruntime_\w+\{", text, re.MULTILINE), text


def test_without_an_account_the_start_says_why_the_scrapes_are_empty(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETSTORE_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ROCKETSTORE_SECRET_KEY", raising=False)
    with _serve(tmp_path) as serve:
        assert _errors(_scrape(serve)) > 0
        serve.terminate()
        assert serve.proc is not None and serve.proc.stderr is not None
        assert "set ROCKETSTORE_ACCESS_KEY and ROCKETSTORE_SECRET_KEY" in serve.proc.stderr.read()
