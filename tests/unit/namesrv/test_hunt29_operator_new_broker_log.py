"""The name server logs a broker's first registration (4.9.3's "new broker registered"), not the ones every
30 s after, and again after the broker was gone.

Found running `rocketstore namesrv -v` as an operator: its log named brokers that left ("gone with their
connection") but never one that came, so a broker that registered late, or under the wrong cluster or name,
could not be told from the log."""

from __future__ import annotations

import logging

import pytest

from rocketstore.namesrv.route_table import RouteTable
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody

T0 = 1_700_000_000_000


def _register(table: RouteTable, now: int, connection: object) -> None:
    table.register_broker("OpCluster", "10.0.0.1:10911", "broker-a", 0, "10.0.0.1:10912",
                          RegisterBrokerBody({}, DataVersion(T0, 1)), now, connection)


def test_a_broker_is_logged_when_it_comes_not_at_each_registration(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rocketstore.namesrv.route_table")
    table = RouteTable()
    connection = object()
    for i in range(3):
        _register(table, T0 + i * 30_000, connection)

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("new broker registered")]

    assert lines() == ["new broker registered: 10.0.0.1:10911 (cluster OpCluster, broker-a, id 0), "
                       "HA server 10.0.0.1:10912"]
    table.connection_closed(connection)
    _register(table, T0 + 200_000, object())
    assert len(lines()) == 2


def test_a_broker_that_unregisters_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    # found alongside: a broker stopped with SIGTERM (UNREGISTER_BROKER, then its connection closes with
    # nothing left to remove) left no line in the name server's log
    caplog.set_level(logging.INFO, logger="rocketstore.namesrv.route_table")
    table = RouteTable()
    _register(table, T0, object())
    for _ in range(2):
        table.unregister_broker("OpCluster", "10.0.0.1:10911", "broker-a", 0)
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("broker unregistered")] == [
        "broker unregistered: 10.0.0.1:10911 (cluster OpCluster, broker-a, id 0)"]
