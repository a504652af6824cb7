"""The values AdminClient's calls answer with (clusters, queue stats, consume progress, connections, ACL and
broker statistics), and the check of topic and group names its calls make before anything is sent.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocketstore.client.errors import ClientError
from rocketstore.message.names import GROUP_MAX_LENGTH, NAME_CHARS, TOPIC_MAX_LENGTH
from rocketstore.remoting.bodies import BrokerData, DataVersion

if TYPE_CHECKING:
    from rocketstore.remoting.bodies import QueueData, TopicRouteData
    from rocketstore.remoting.command import RemotingCommand
    from rocketstore.remoting.transport import ConnectionPool

__all__ = [
    "AclConfigInfo",
    "AclVersionInfo",
    "AdminCalls",
    "BrokerConsumeStats",
    "BrokerStatsData",
    "ClusterBrokerRow",
    "ClusterInfo",
    "ConsumeProgress",
    "ConsumerConnection",
    "ConsumerConnectionInfo",
    "GroupConfigInfo",
    "InvalidNameError",
    "NoConsumeProgressError",
    "QueueProgress",
    "QueueStats",
    "StatsWindow",
    "check_name",
    "mq_fields",
    "route_masters",
    "stats_window",
]



class NoConsumeProgressError(ClientError):
    """No broker holds a committed offset of the group (on the topic asked about)."""


class InvalidNameError(ClientError):
    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        limit = _max_length(kind)
        super().__init__(f"invalid {kind} name {name!r}: use 1 to {limit} of the characters a-z A-Z 0-9 _ - % |")


def check_name(kind: str, name: str) -> str:
    """*name* if RocketMQ accepts it as a topic or group name, else InvalidNameError."""
    if not name or len(name) > _max_length(kind) or not NAME_CHARS.issuperset(name):
        raise InvalidNameError(kind, name)
    return name


def _max_length(kind: str) -> int:
    """A group may have up to 255 characters (Validators.checkGroup), a topic up to 127 (TopicValidator)."""
    return GROUP_MAX_LENGTH if kind == "group" else TOPIC_MAX_LENGTH


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    brokers: dict[str, BrokerData]
    clusters: dict[str, list[str]]

    def masters(self, cluster: str | None = None) -> dict[str, str]:
        """broker name -> master address, of one cluster or of all."""
        names = self.clusters.get(cluster, []) if cluster is not None else list(self.brokers)
        out = {}
        for name in sorted(names):
            bd = self.brokers.get(name)
            addr = bd.master_addr() if bd is not None else None
            if addr is not None:
                out[name] = addr
        return out

    def require(self, cluster: str | None) -> None:
        """ClientError when *cluster* is named and the name servers do not know it."""
        if cluster is not None and cluster not in self.clusters:
            known = ", ".join(sorted(self.clusters)) or "none"
            raise ClientError(f"cluster {cluster!r} is not known to the name server (known: {known})")

    def addresses(self) -> set[str]:
        return {a for bd in self.brokers.values() for a in bd.broker_addrs.values()}


@dataclass(frozen=True, slots=True)
class QueueStats:
    topic: str
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class QueueProgress:
    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    last_timestamp_ms: int

    @property
    def lag(self) -> int:
        """mqadmin's Diff: messages stored but not yet consumed by the group."""
        return self.broker_offset - self.consumer_offset


@dataclass(frozen=True, slots=True)
class ConsumeProgress:
    group: str
    queues: list[QueueProgress]
    consume_tps: float

    @property
    def total_lag(self) -> int:
        return sum(q.lag for q in self.queues)


@dataclass(frozen=True, slots=True)
class ConsumerConnection:
    """One client of a consumer group as a broker sees it (GET_CONSUMER_CONNECTION_LIST)."""

    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True, slots=True)
class ConsumerConnectionInfo:
    """What one broker knows of a consumer group's clients (GET_CONSUMER_CONNECTION_LIST; mqadmin
    consumerConnection): the connections, topic -> SubscriptionData JSON, and the group's settings."""

    broker_addr: str
    connections: list[ConsumerConnection]
    subscriptions: dict[str, dict[str, Any]]
    consume_type: str
    message_model: str
    consume_from_where: str


@dataclass(frozen=True, slots=True)
class GroupConfigInfo:
    """One broker's subscription group config (mqadmin getConsumerConfig), as the broker's JSON."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    config: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ClusterBrokerRow:
    """One broker (master or slave) of mqadmin clusterList: its runtime figures, or why it did not answer."""

    cluster_name: str
    broker_name: str
    broker_id: int
    broker_addr: str
    #: the broker's GET_BROKER_RUNTIME_INFO table; None when it did not answer
    runtime: dict[str, str] | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AclVersionInfo:
    """A broker's ACL file versions (GET_BROKER_CLUSTER_ACL_INFO; mqadmin clusterAclConfigVersion)."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    #: conf/plain_acl.yml's (4.9.3's deprecated single version)
    version: DataVersion
    #: absolute file path on the broker -> its version
    file_versions: dict[str, DataVersion]


@dataclass(frozen=True, slots=True)
class AclConfigInfo:
    """A broker's ACL configuration (GET_BROKER_CLUSTER_ACL_CONFIG): the global white addresses of all its
    files and each account as RocketMQ's PlainAccessConfig JSON (accessKey, secretKey, admin, ...)."""

    global_white_addrs: list[str]
    accounts: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class StatsWindow:
    """One window of a broker stat item (BrokerStatsItem): the sum gained, per second, per event."""

    sum: int
    tps: float
    avgpt: float


@dataclass(frozen=True, slots=True)
class BrokerStatsData:
    """A broker stat item over its last minute, hour and day (VIEW_BROKER_STATS_DATA)."""

    minute: StatsWindow
    hour: StatsWindow
    day: StatsWindow


@dataclass(frozen=True, slots=True)
class BrokerConsumeStats:
    """Every subscription group's progress on one broker (GET_BROKER_CONSUME_STATS; mqadmin
    brokerConsumeStats): per group one ConsumeProgress per topic, and the summed lag."""

    broker_addr: str
    total_diff: int
    groups: dict[str, list[ConsumeProgress]]


def route_masters(route: TopicRouteData) -> dict[str, tuple[str, QueueData]]:
    """Broker name -> (master address, queue data) of every broker of *route* that has a master, by name."""
    out = {}
    for qd in route.queue_datas:
        bd = route.broker(qd.broker_name)
        addr = bd.master_addr() if bd is not None else None
        if addr is not None:
            out[qd.broker_name] = (addr, qd)
    return dict(sorted(out.items()))


def stats_window(obj: Any) -> StatsWindow:
    obj = obj if isinstance(obj, dict) else {}
    return StatsWindow(int(obj.get("sum") or 0), float(obj.get("tps") or 0.0), float(obj.get("avgpt") or 0.0))


@contextmanager
def answer_shape(what: str, addr: str) -> Iterator[None]:
    """Reading an answer body of the wrong shape (a number as text, a null, a list for an object: another
    implementation, a proxy, version skew) raises ClientError naming the answer, not the ValueError,
    TypeError, AttributeError or KeyError of the code reading it."""
    try:
        yield
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ClientError(f"unexpected {what} answer from {addr}: {type(exc).__name__}: {exc}") from exc


def mq_fields(key: Any) -> dict[str, Any]:
    """A fastjson object key (a tuple of (name, value) pairs from fastjson.loads) as a dict."""
    if isinstance(key, tuple):
        return dict(key)
    raise ClientError(f"unexpected message queue key in a broker answer: {key!r}")


class AdminCalls:
    """What AdminClient's mixins (ACL, broker statistics, name server calls) use of AdminClient, declared
    for the type checker; AdminClient defines each."""

    namesrv_addrs: list[str]
    timeout_s: float
    pool: ConnectionPool

    if TYPE_CHECKING:
        async def _call(self, addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"",
                        *ok_codes: int, timeout_s: float | None = None) -> RemotingCommand: ...

        async def namesrvs(self) -> list[str]: ...

        @staticmethod
        def _json(response: RemotingCommand) -> dict[Any, Any]: ...

        async def master_addrs(self, cluster: str | None = None) -> list[str]: ...

        async def cluster_info(self) -> ClusterInfo: ...

        async def route(self, topic: str) -> TopicRouteData: ...

        async def topic_masters(self, topic: str) -> dict[str, str]: ...

        async def runtime_info(self, broker_addr: str) -> dict[str, str]: ...
