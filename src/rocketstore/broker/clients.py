"""Connected producers and consumers (RocketMQ's ProducerManager + ConsumerManager).

A client is identified by its connection; heartbeats (every 30 s) register it with its groups, and it is
dropped after ``channel_expired_timeout_ms`` (120 s) without one, on UNREGISTER_CLIENT, or when its
connection closes.  Consumer groups keep their subscriptions by topic (Java clients pull without a
subscription string and rely on them).  Methods that change a consumer group's client set return True so
the caller can send NOTIFY_CONSUMER_IDS_CHANGED.

Pure bookkeeping (callers pass ``now_ms``); not thread-safe: the broker's event loop owns it.  A channel's
``last_update_ms`` (liveness) is on the monotonic clock (:func:`liveness_ms`), unlike 4.9.3's
currentTimeMillis: a wall clock stepped forward (NTP, a VM resumed) would otherwise drop every client at
the next scan, and one stepped back would keep dead ones for as long.  It is never shown; the filter
data's born time (``filter_born_ms``), which QUERY_CONSUME_QUEUE shows, stays wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rocketstore.remoting.bodies import ConsumerData, SubscriptionData

__all__ = ["ClientChannel", "ClientRegistry", "ConsumerGroupInfo", "liveness_ms"]


def liveness_ms() -> int:
    """The clock of client (and queue lock) liveness: monotonic ms, immune to wall-clock steps."""
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class ClientChannel:
    connection: object
    client_id: str
    language: str
    version: int
    client_addr: str
    last_update_ms: int

    def to_json(self) -> dict[str, object]:
        return {"clientAddr": self.client_addr, "clientId": self.client_id, "language": self.language,
                "version": self.version}


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str
    message_model: str
    consume_from_where: str
    channels: dict[object, ClientChannel] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_ms: int = 0
    #: topic -> when its current expression (not TAG) was first registered: 4.9.3's ConsumerFilterData
    #: bornTime, which QUERY_CONSUME_QUEUE shows (broker.filter_data)
    filter_born_ms: dict[str, int] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.channels.values()]

    def update_subscriptions(self, subscriptions: tuple[SubscriptionData, ...], now_ms: int) -> bool:
        """Replace the subscription set as ConsumerGroupInfo.updateSubscription does; True if it changed (a
        topic added or removed).  A topic's subscription is replaced only by a newer subVersion: a member
        still heartbeating an older expression (a rolling update) must not undo the newer one, which Java
        consumers rely on when they pull without a subscription string."""
        changed = False
        wanted = {s.topic: s for s in subscriptions}
        for topic, sub in wanted.items():
            old = self.subscriptions.get(topic)
            if old is None:
                self.subscriptions[topic] = sub
                changed = True
            elif sub.sub_version > old.sub_version:
                self.subscriptions[topic] = sub
            else:
                continue
            if sub.expression_type == "TAG":
                self.filter_born_ms.pop(topic, None)
            elif (old is None or topic not in self.filter_born_ms
                  or (old.sub_string, old.expression_type) != (sub.sub_string, sub.expression_type)):
                self.filter_born_ms[topic] = now_ms  # a new expression: 4.9.3 builds new filter data
        for topic in [t for t in self.subscriptions if t not in wanted]:
            del self.subscriptions[topic]
            self.filter_born_ms.pop(topic, None)
            changed = True
        self.last_update_ms = now_ms
        return changed


class ClientRegistry:
    def __init__(self, channel_expired_timeout_ms: int = 120_000) -> None:
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.consumers: dict[str, ConsumerGroupInfo] = {}
        #: producer group -> connection -> channel
        self.producers: dict[str, dict[object, ClientChannel]] = {}
        #: connection -> the consumer groups / producer groups it is in, so a closed connection is looked for
        #: in those only (not in every one of thousands of groups, once per closed connection)
        self._consumer_groups_of: dict[object, dict[str, None]] = {}
        self._producer_groups_of: dict[object, dict[str, None]] = {}
        #: producer client id -> (group, connection) -> channel: the reply push finds its producer's
        #: connection without walking every producer (4.9.3's clientChannelTable)
        self._producers_by_id: dict[str, dict[tuple[str, object], ClientChannel]] = {}

    # --- consumers ------------------------------------------------------------------------------------

    def register_consumer(self, data: ConsumerData, channel: ClientChannel, now_ms: int) -> tuple[bool, bool]:
        """(client set changed, subscriptions changed) after a consumer's heartbeat.  *channel* carries the
        heartbeat's liveness stamp (:func:`liveness_ms`); *now_ms* is wall time (a new filter's born time)."""
        info = self.consumers.get(data.group_name)
        if info is None:
            info = self.consumers[data.group_name] = ConsumerGroupInfo(
                data.group_name, data.consume_type, data.message_model, data.consume_from_where)
        info.consume_type = data.consume_type
        info.message_model = data.message_model
        info.consume_from_where = data.consume_from_where
        old = info.channels.get(channel.connection)
        new_client = old is None or old.client_id != channel.client_id
        if old is None:
            info.channels[channel.connection] = channel
            self._consumer_groups_of.setdefault(channel.connection, {})[data.group_name] = None
        else:
            old.client_id = channel.client_id
            old.last_update_ms = channel.last_update_ms
        subs_changed = info.update_subscriptions(data.subscriptions, now_ms)
        return new_client, subs_changed

    def unregister_consumer(self, group: str, connection: object) -> bool:
        """True if the group lost a client."""
        info = self.consumers.get(group)
        if info is None or info.channels.pop(connection, None) is None:
            return False
        _forget(self._consumer_groups_of, connection, group)
        if not info.channels:
            del self.consumers[group]
        return True

    def group(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumers.get(group)

    def consumer_ids(self, group: str) -> list[str]:
        info = self.consumers.get(group)
        return info.client_ids() if info is not None else []

    def subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumers.get(group)
        return info.subscriptions.get(topic) if info is not None else None

    def groups_subscribing(self, topic: str) -> list[str]:
        return sorted(g for g, info in self.consumers.items() if topic in info.subscriptions)

    # --- producers ------------------------------------------------------------------------------------

    def register_producer(self, group: str, channel: ClientChannel, now_ms: int) -> None:
        """*channel* carries the heartbeat's liveness stamp (:func:`liveness_ms`), which an existing
        registration takes; *now_ms* (wall time) is not needed for a producer."""
        channels = self.producers.setdefault(group, {})
        old = channels.get(channel.connection)
        if old is None:
            channels[channel.connection] = channel
            self._producer_groups_of.setdefault(channel.connection, {})[group] = None
            self._producers_by_id.setdefault(channel.client_id, {})[(group, channel.connection)] = channel
        else:
            old.last_update_ms = channel.last_update_ms

    def unregister_producer(self, group: str, connection: object) -> None:
        channels = self.producers.get(group)
        if channels is not None:
            gone = channels.pop(connection, None)
            if gone is not None:
                _forget(self._producer_groups_of, connection, group)
                same_id = self._producers_by_id.get(gone.client_id)
                if same_id is not None:
                    same_id.pop((group, connection), None)
                    if not same_id:
                        del self._producers_by_id[gone.client_id]
            if not channels:
                del self.producers[group]

    def producer_channels(self, group: str) -> list[ClientChannel]:
        return list(self.producers.get(group, {}).values())

    def producer_channel(self, client_id: str) -> ClientChannel | None:
        """The connection producer *client_id* heartbeats on, whatever its group (4.9.3's
        ProducerManager.findChannel, which the reply push uses); the most recently heartbeated one if several."""
        found: ClientChannel | None = None
        for channel in self._producers_by_id.get(client_id, {}).values():
            if found is None or channel.last_update_ms > found.last_update_ms:
                found = channel
        return found

    # --- removal --------------------------------------------------------------------------------------

    def connection_closed(self, connection: object) -> list[str]:
        """Forget *connection* everywhere; returns the consumer groups that lost a client."""
        changed = list(self._consumer_groups_of.get(connection, ()))
        for g in changed:
            self.unregister_consumer(g, connection)
        for group in list(self._producer_groups_of.get(connection, ())):
            self.unregister_producer(group, connection)
        return changed

    def connection_count(self) -> int:
        """Connections registered as a producer or a consumer of some group."""
        return len(self._consumer_groups_of.keys() | self._producer_groups_of.keys())

    def producer_id_count(self) -> int:
        """Producer client ids registered (in some group, on some connection)."""
        return len(self._producers_by_id)

    def expire(self, now_ms: int) -> tuple[list[str], list[object]]:
        """Drop clients without a heartbeat for too long: (consumer groups changed, connections dropped).
        *now_ms* is on the channels' clock (:func:`liveness_ms`)."""
        limit = now_ms - self.channel_expired_timeout_ms
        changed: list[str] = []
        dropped: list[object] = []
        for group, info in list(self.consumers.items()):
            for conn, ch in list(info.channels.items()):
                if ch.last_update_ms < limit:
                    self.unregister_consumer(group, conn)
                    dropped.append(conn)
                    if group not in changed:
                        changed.append(group)
        for group, channels in list(self.producers.items()):
            for conn, ch in list(channels.items()):
                if ch.last_update_ms < limit:
                    self.unregister_producer(group, conn)
                    dropped.append(conn)
        return changed, dropped


def _forget(groups_of: dict[object, dict[str, None]], connection: object, group: str) -> None:
    """*connection* is no longer in *group*; a connection in no group leaves the index."""
    groups = groups_of.get(connection)
    if groups is not None:
        groups.pop(group, None)
        if not groups:
            del groups_of[connection]
