"""brokerIP1 / brokerIP2 written as a bracketed IPv6 literal (``brokerIP1=[::1]``, the form addresses print in)
are taken as 4.9.3 takes them (InetAddress accepts the brackets): the broker listens on and advertises ::1,
and records and message ids carry that host, rather than the broker failing to start with "Name or service
not known" and the store commands with "cannot parse host address '[[::1]]:10911'"."""

from __future__ import annotations

from pathlib import Path

from rocketstore.broker.config import load_broker_conf
from rocketstore.message.host import parse_host
from rocketstore.store.config import StoreConfig


def test_a_bracketed_ipv6_broker_ip_is_the_address_inside_the_brackets(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1 = [::1]\nbrokerIP2=[2001:db8::7]\nlistenPort=10915\n", encoding="utf-8")
    broker, store, props = load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))
    assert broker.broker_ip1 == "::1" and broker.advertised_ip() == "::1"
    assert broker.broker_ip2 == "2001:db8::7"
    assert props["brokerIP1"] == "::1"  # what the CLI listens on when --host is not given
    assert parse_host(store.store_host) == parse_host("[::1]:10915")


def test_the_store_config_alone_reads_a_bracketed_broker_ip() -> None:
    store = StoreConfig.from_properties({"brokerIP1": "[::1]", "listenPort": "10911"})
    assert parse_host(store.store_host) == parse_host("[::1]:10911")
