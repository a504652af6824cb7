"""ClientRegistry at scale: a closed connection is looked for only in the groups it joined (4.9.3 and we used
to test it against every consumer and producer group: 5,000 groups made each close ~1 ms of the loop, a
reconnect storm of 500 clients half a second), and leaves no trace.  Counted, not timed."""

from __future__ import annotations

from rocketstore.broker.clients import ClientChannel, ClientRegistry
from rocketstore.remoting.bodies import ConsumerData, SubscriptionData

GROUPS = 2000
CONNECTIONS = 200
PER_CONNECTION = 5


class _Conn:
    """A connection key (ClientRegistry only keys its tables by it)."""


class _CountedChannels(dict):  # type: ignore[type-arg]
    """A group's channel table itself, counting the membership tests made on it."""

    tests = 0

    def __contains__(self, key: object) -> bool:
        type(self).tests += 1
        return super().__contains__(key)


def _channel(conn: object, i: int, now_ms: int = 0) -> ClientChannel:
    return ClientChannel(conn, f"client-{i}", "JAVA", 399, f"10.0.0.{i % 250}:{1000 + i}", now_ms)


def test_closing_connections_visits_only_their_groups_and_leaves_nothing_behind() -> None:
    registry = ClientRegistry()
    for g in range(GROUPS):  # groups with a member on a connection that stays
        registry.register_consumer(ConsumerData(f"idle_group_{g}", subscriptions=(SubscriptionData("T", "*"),)),
                                   _channel("stays", g), 0)
        registry.register_producer(f"idle_producers_{g}", _channel("stays", g), 0)
    conns = [_Conn() for _ in range(CONNECTIONS)]
    for i, conn in enumerate(conns):
        for k in range(PER_CONNECTION):
            group = f"idle_group_{(i * PER_CONNECTION + k) % GROUPS}"
            registry.register_consumer(ConsumerData(group, subscriptions=(SubscriptionData("T", "*"),)),
                                       _channel(conn, i), 0)
            registry.register_producer(f"idle_producers_{(i * PER_CONNECTION + k) % GROUPS}", _channel(conn, i), 0)
    for info in registry.consumers.values():
        info.channels = _CountedChannels(info.channels)
    _CountedChannels.tests = 0

    changed_total = []
    for conn in conns:
        changed = registry.connection_closed(conn)
        assert len(changed) == PER_CONNECTION
        changed_total += changed
    assert sorted(changed_total) == sorted(f"idle_group_{n % GROUPS}" for n in range(CONNECTIONS * PER_CONNECTION))
    assert _CountedChannels.tests < CONNECTIONS * PER_CONNECTION, (
        f"{_CountedChannels.tests} group membership tests for {CONNECTIONS} closed connections")
    # only the connection that stays is left, in every group
    assert all(list(info.channels) == ["stays"] for info in registry.consumers.values())
    assert all(list(channels) == ["stays"] for channels in registry.producers.values())
    assert registry.connection_count() == 1
    registry.connection_closed("stays")
    assert registry.consumers == {} and registry.producers == {} and registry.connection_count() == 0


def test_unregister_and_expiry_keep_the_connection_index_in_step() -> None:
    registry = ClientRegistry(channel_expired_timeout_ms=1000)
    a, b = _Conn(), _Conn()
    for group in ("g1", "g2"):
        registry.register_consumer(ConsumerData(group), _channel(a, 1), 0)
        registry.register_producer(f"p_{group}", _channel(a, 1), 0)
    registry.register_consumer(ConsumerData("g1"), _channel(b, 2, 5000), 5000)
    assert registry.unregister_consumer("g1", a)
    registry.unregister_producer("p_g1", a)
    changed, dropped = registry.expire(3000)  # a's last heartbeat (0) is too old; b's (5000) is not
    assert changed == ["g2"] and dropped == [a, a]
    assert registry.connection_count() == 1
    assert registry.connection_closed(a) == []
    assert registry.connection_closed(b) == ["g1"]
    assert registry.consumers == {} and registry.producers == {} and registry.connection_count() == 0


class _CountedProducers(dict):  # type: ignore[type-arg]
    """A producer group's channel table itself, counting the walks over its channels."""

    walks = 0

    def values(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().values()

    def items(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().items()


def test_the_reply_push_finds_its_producer_without_walking_every_producer() -> None:
    registry = ClientRegistry()
    conns = [_Conn() for _ in range(CONNECTIONS)]
    for i, conn in enumerate(conns):
        registry.register_producer(f"reply_producers_{i % 50}", _channel(conn, i, now_ms=i), i)
    later = _Conn()  # client-7 again, on a second connection with a newer heartbeat
    registry.register_producer("other_group", _channel(later, 7, now_ms=10_000), 10_000)
    for group in list(registry.producers):
        registry.producers[group] = _CountedProducers(registry.producers[group])
    _CountedProducers.walks = 0
    for i in range(CONNECTIONS):
        found = registry.producer_channel(f"client-{i}")
        assert found is not None and found.connection is (later if i == 7 else conns[i])
    assert registry.producer_channel("nobody") is None
    assert _CountedProducers.walks == 0, f"{_CountedProducers.walks} walks over producer groups for {CONNECTIONS} lookups"
    registry.connection_closed(later)
    assert registry.producer_channel("client-7").connection is conns[7]  # type: ignore[union-attr]
    for conn in conns:
        registry.connection_closed(conn)
    assert registry.producer_channel("client-7") is None
    assert registry.producers == {} and registry.producer_id_count() == 0
