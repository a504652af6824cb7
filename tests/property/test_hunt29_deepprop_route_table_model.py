"""Hypothesis: the name server's RouteTable against a plain model of 4.9.3's RouteInfoManager (routing.md
section 2), one broker address always under the same broker name and cluster (where ours deliberately
differs from 4.9.3: an address moved to another name, an unregistration naming another broker's id).

Rules register a broker (master or slave ids, so a slave is promoted and a master demoted; data versions
that repeat or change; topic configs; a new connection or the old one), unregister it, close its connection,
let time pass (touching some brokers: expiry after 120 s without one), delete a topic, and wipe or add the
write perm of a broker name.  Model rules, from 4.9.3: a master's topics are taken when it registers first
under its id or its data version changed, and never removed by a later registration; a slave registering
learns its master's address and HA address while that master is live; a broker name left without an address
takes its queue data with it, and a topic left without queue data goes; a route needs queue data and a
known broker.  After every step the topic list, each route, the cluster info and the live brokers agree.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from rocketstore.namesrv.route_table import BROKER_EXPIRY_MS, RouteTable
from rocketstore.remoting.bodies import DataVersion, Perm, RegisterBrokerBody, TopicConfig

CLUSTER_OF = {"n0": "c0", "n1": "c0", "n2": "c1"}
NAME_OF = {"a0": "n0", "a1": "n0", "a2": "n1", "a3": "n2", "a4": "n2"}
TOPICS = ("T0", "T1", "T2")
Queues = tuple[int, int, int]  # read, write, perm


class Live:
    def __init__(self, version: DataVersion, connection: object, ha_addr: str, at_ms: int) -> None:
        self.version, self.connection, self.ha_addr, self.at_ms = version, connection, ha_addr, at_ms


class RouteTableMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.table = RouteTable()
        self.now_ms = 1_000_000
        self.connections: dict[str, object] = {}
        # the model
        self.clusters: dict[str, set[str]] = {}
        self.brokers: dict[str, dict[int, str]] = {}  # name -> id -> address
        self.topics: dict[str, dict[str, Queues]] = {}  # topic -> name -> queues
        self.live: dict[str, Live] = {}

    def _drop_name(self, name: str) -> None:
        del self.brokers[name]
        members = self.clusters[CLUSTER_OF[name]]
        members.discard(name)
        if not members:
            del self.clusters[CLUSTER_OF[name]]
        for topic in list(self.topics):
            self.topics[topic].pop(name, None)
            if not self.topics[topic]:
                del self.topics[topic]

    def _drop_addr(self, addr: str) -> None:
        """A closed or expired connection: the address leaves the live brokers and its broker name."""
        self.live.pop(addr, None)
        name = NAME_OF[addr]
        addrs = self.brokers.get(name, {})
        for broker_id in [i for i, a in addrs.items() if a == addr]:
            del addrs[broker_id]
        if name in self.brokers and not addrs:
            self._drop_name(name)

    @rule(addr=st.sampled_from(sorted(NAME_OF)), broker_id=st.sampled_from([0, 0, 1, 2]),
          counter=st.integers(0, 2), new_connection=st.booleans(), ha_addr=st.sampled_from(["h1", "h2"]),
          configs=st.dictionaries(st.sampled_from(TOPICS),
                                  st.tuples(st.integers(1, 4), st.integers(1, 4), st.sampled_from([2, 4, 6])),
                                  max_size=3))
    def register(self, addr: str, broker_id: int, counter: int, new_connection: bool, ha_addr: str,
                 configs: dict[str, Queues]) -> None:
        name = NAME_OF[addr]
        if new_connection or addr not in self.connections:
            self.connections[addr] = object()
        connection = self.connections[addr]
        version = DataVersion(5, counter)
        body = RegisterBrokerBody({t: TopicConfig(t, r, w, p) for t, (r, w, p) in configs.items()}, version)
        result = self.table.register_broker(CLUSTER_OF[name], addr, name, broker_id, ha_addr, body,
                                            self.now_ms, connection)

        self.clusters.setdefault(CLUSTER_OF[name], set()).add(name)
        addrs = self.brokers.setdefault(name, {})
        first = addrs.get(broker_id) is None
        for other in [i for i, a in addrs.items() if a == addr and i != broker_id]:
            del addrs[other]
        addrs[broker_id] = addr
        previous = self.live.get(addr)
        if broker_id == 0 and (first or previous is None or previous.version != version):
            for topic, queues in configs.items():
                self.topics.setdefault(topic, {})[name] = queues
        self.live[addr] = Live(version, connection, ha_addr, self.now_ms)
        master = addrs.get(0) if broker_id != 0 else None
        expected = (self.live[master].ha_addr, master) if master in self.live else (None, None)
        assert (result.ha_server_addr, result.master_addr) == expected

    @rule(addr=st.sampled_from(sorted(NAME_OF)))
    def unregister(self, addr: str) -> None:
        name = NAME_OF[addr]
        ids = [i for i, a in self.brokers.get(name, {}).items() if a == addr]
        if not ids:
            return
        self.table.unregister_broker(CLUSTER_OF[name], addr, name, ids[0])
        self.live.pop(addr, None)
        del self.brokers[name][ids[0]]
        if not self.brokers[name]:
            self._drop_name(name)

    @rule(addr=st.sampled_from(sorted(NAME_OF)))
    def close_connection(self, addr: str) -> None:
        connection = self.connections.pop(addr, None)
        if connection is None:
            return
        gone = self.table.connection_closed(connection)
        expected = [a for a, live in self.live.items() if live.connection is connection]
        assert gone == expected
        for a in expected:
            self._drop_addr(a)

    @rule(ms=st.sampled_from([1, 60_000, BROKER_EXPIRY_MS - 1, BROKER_EXPIRY_MS, BROKER_EXPIRY_MS + 1]),
          touched=st.lists(st.sampled_from(sorted(NAME_OF)), max_size=2))
    def time_passes(self, ms: int, touched: list[str]) -> None:
        self.now_ms += ms
        for addr in touched:
            self.table.touch(addr, self.now_ms)
            if addr in self.live:
                self.live[addr].at_ms = self.now_ms
        gone = self.table.expire(self.now_ms)
        expected = [a for a, live in self.live.items() if live.at_ms + BROKER_EXPIRY_MS < self.now_ms]
        assert sorted(gone) == sorted(expected)
        for addr in expected:
            self._drop_addr(addr)

    @rule(topic=st.sampled_from(TOPICS))
    def delete_topic(self, topic: str) -> None:
        self.table.delete_topic(topic)
        self.topics.pop(topic, None)

    @rule(name=st.sampled_from(sorted(CLUSTER_OF)), add=st.booleans())
    def write_perm(self, name: str, add: bool) -> None:
        count = self.table.add_write_perm(name) if add else self.table.wipe_write_perm(name)
        changed = 0
        for queues in self.topics.values():
            if name in queues:
                read, write, perm = queues[name]
                queues[name] = (read, write, Perm.READ | Perm.WRITE if add else perm & ~Perm.WRITE)
                changed += 1
        assert count == changed

    @invariant()
    def the_table_agrees_with_the_model(self) -> None:
        if not hasattr(self, "table"):
            return
        assert self.table.topics() == sorted(self.topics)
        for topic in TOPICS:
            route = self.table.route(topic)
            queues = self.topics.get(topic, {})
            known = [n for n in queues if n in self.brokers]
            if not known:
                assert route is None, topic
                continue
            assert route is not None, topic
            routed = {q.broker_name: (q.read_queue_nums, q.write_queue_nums, q.perm)
                      for q in route.queue_datas}
            assert routed == queues
            assert {b.broker_name: (b.cluster, b.broker_addrs) for b in route.broker_datas} == \
                {n: (CLUSTER_OF[n], self.brokers[n]) for n in known}
        info = self.table.cluster_info()
        assert {c: set(names) for c, names in info["clusterAddrTable"].items()} == self.clusters
        assert {n: (b.cluster, b.broker_addrs) for n, b in info["brokerAddrTable"].items()} == \
            {n: (CLUSTER_OF[n], addrs) for n, addrs in self.brokers.items()}
        assert sorted(self.table.live) == sorted(self.live)


RouteTableMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                               suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.filter_too_much])
test_the_route_table_agrees_with_a_model_of_4_9_3 = RouteTableMachine.TestCase
