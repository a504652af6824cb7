"""BrokerConfig: the broker (non-store) half of a broker.conf, with RocketMQ's defaults and names.

``BrokerConfig.from_properties(props)`` reads the camelCase names users write (brokerClusterName,
brokerName, brokerId, namesrvAddr, listenPort, brokerIP1, autoCreateTopicEnable, ...); the store half of
the same file goes through ``StoreConfig.from_properties``.  :func:`load_broker_conf` does both.
Frozen and picklable.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import socket
from dataclasses import dataclass

from rocketstore.errors import StoreConfigError
from rocketstore.broker import config_keys
from rocketstore.remoting.headers import MAX_QUEUE_NUMS
from rocketstore.store.config import BrokerRole, StoreConfig, java_integer, property_field, read_properties_file

__all__ = ["BrokerConfig", "load_broker_conf", "local_ip"]


def local_ip() -> str:
    """The first non-loopback IPv4 address of this host (RocketMQ's brokerIP1 default), else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET address: no packet is sent for a UDP connect
            ip = str(s.getsockname()[0])
            if not ip.startswith("127."):
                return ip
    except OSError:
        pass
    return "127.0.0.1"


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = dataclasses.field(default_factory=lambda: socket.gethostname() or "broker-a")
    broker_id: int = 0
    #: ``host:port;host:port`` (RocketMQ's namesrvAddr); None or empty: register nowhere
    namesrv_addr: str | None = None
    listen_port: int = 10911
    #: the address put into the route and STOREHOST; None: the listen host if specific, else local_ip()
    broker_ip1: str | None = None
    broker_ip2: str | None = None
    ha_listen_port: int | None = None
    #: a slave's master HA address (haMasterAddress, host:port); None or empty: learnt from the name servers
    ha_master_address: str | None = None
    #: a slave answers pulls itself (slaveReadEnable) instead of sending consumers to the master
    slave_read_enable: bool = False
    #: the interface the server binds (not a RocketMQ property; RocketMQ binds every interface)
    listen_host: str = "0.0.0.0"
    broker_permission: int = 6
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    long_polling_enable: bool = True
    short_polling_time_ms: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    reject_transaction_message: bool = False
    #: a reply (SEND_REPLY_MESSAGE) is stored in <cluster>_REPLY_TOPIC as well as pushed to the requester
    store_reply_message_enable: bool = True
    #: a half message younger than this (by born time) is not checked back yet (transactionTimeOut)
    transaction_timeout_ms: int = 6000
    #: checks of one half message before it is moved to TRANS_CHECK_MAX_TIME_TOPIC (transactionCheckMax)
    transaction_check_max: int = 15
    #: period of the transaction check service (transactionCheckInterval)
    transaction_check_interval_ms: int = 60000
    register_name_server_period_ms: int = 30000
    register_broker_timeout_ms: int = 6000
    flush_consumer_offset_interval_ms: int = 5000
    compressed_register: bool = False
    enable_property_filter: bool = False
    #: SQL92 for retry topics (filterSupportRetry): a pull of %RETRY%<group> checks each message against the
    #: group's SQL92 subscription of the topic it came from (its RETRY_TOPIC property); see broker/pull.py
    filter_support_retry: bool = False
    #: clients without a heartbeat for this long are dropped
    channel_expired_timeout_ms: int = 120000
    server_channel_max_idle_time_s: int = 120
    #: rocketstore's own: keep the event loop polling this long after each read or write instead of
    #: sleeping (remoting/busy_poll.py: one-at-a-time sends ~2.5x faster for a busy core); 0: off
    busy_poll_micros: int = 0
    #: plain ACL (broker/acl.py): every request checked against <rocketmqHome>/conf/plain_acl.yml and
    #: conf/acl/*.yml; rocketmqHome defaults to $ROCKETMQ_HOME (None, not shown, when unset, as 4.9.3's
    #: null), else the working directory
    acl_enable: bool = False
    rocketmq_home: str | None = dataclasses.field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME"))

    def __post_init__(self) -> None:
        errors: list[str] = []  # every bad value, named in one error (not one per start attempt)
        if self.broker_id < 0:
            errors.append("brokerId must be >= 0")
        if not 0 <= self.listen_port <= 65535:
            errors.append(f"listenPort {self.listen_port} out of range")
        if self.ha_listen_port is not None and not 0 <= self.ha_listen_port <= 65535:
            errors.append(f"haListenPort {self.ha_listen_port} out of range (0 .. 65535)")
        if not self.broker_name:
            errors.append("brokerName must not be empty")
        if self.transaction_check_interval_ms <= 0:
            errors.append("transactionCheckInterval must be > 0")
        if self.default_topic_queue_nums > MAX_QUEUE_NUMS:  # TBW102's queues, each auto-created topic's
            errors.append(f"defaultTopicQueueNums {self.default_topic_queue_nums} is too large, "
                          f"allowing at most {MAX_QUEUE_NUMS} queues")
        if not 0 <= self.busy_poll_micros <= 1_000_000:
            errors.append(f"busyPollMicros {self.busy_poll_micros} out of range (0 .. 1000000)")
        if errors:
            raise StoreConfigError("; ".join(errors))

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in re.split(r"[;,]", self.namesrv_addr or "") if a.strip()]

    def acl_home(self) -> str:
        """Where the ACL files are: rocketmqHome, else $ROCKETMQ_HOME, else the working directory."""
        return self.rocketmq_home or os.environ.get("ROCKETMQ_HOME") or os.getcwd()

    @property
    def register_period_s(self) -> float:
        # RocketMQ clamps the period to 10 s .. 60 s
        return max(10_000, min(60_000, self.register_name_server_period_ms)) / 1000

    def ha_port(self) -> int:
        """The HA port to listen on: haListenPort, else RocketMQ's listenPort + 1 (0, the OS picks, when
        listenPort is 0)."""
        if self.ha_listen_port is not None:
            return self.ha_listen_port
        return self.listen_port + 1 if self.listen_port else 0

    def advertised_ip(self) -> str:
        if self.broker_ip1:
            return self.broker_ip1
        if self.listen_host not in ("", "0.0.0.0", "::"):
            return self.listen_host
        return local_ip()

    def replace(self, **changes: object) -> BrokerConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_properties(cls, props: dict[str, str], **overrides: object) -> BrokerConfig:
        """*props*' values by their exact 4.9.3 names (a field's camelCase name, or its alias where it has
        one): a key that only looks like one (AutoCreateTopicEnable, broker_permission), which 4.9.3 ignores,
        is ignored here too.  Every value that is bad is named in the one StoreConfigError raised."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, object] = {}
        errors: list[str] = []
        for name, raw in props.items():
            attr = property_field(name, _ALIASES)
            if attr not in fields:
                continue
            try:
                values[attr] = _coerce(name, raw, fields[attr])
            except StoreConfigError as exc:
                errors.append(str(exc))
        values.update(overrides)
        try:
            config = cls(**values)  # type: ignore[arg-type]
        except StoreConfigError as exc:
            errors.append(str(exc))
        if errors:
            raise StoreConfigError("; ".join(errors))
        return config


_ALIASES = {
    "brokerIP1": "broker_ip1",
    "brokerIP2": "broker_ip2",
    "shortPollingTimeMills": "short_polling_time_ms",
    "registerNameServerPeriod": "register_name_server_period_ms",
    "registerBrokerTimeoutMills": "register_broker_timeout_ms",
    "flushConsumerOffsetInterval": "flush_consumer_offset_interval_ms",
    "channelExpiredTimeout": "channel_expired_timeout_ms",
    "serverChannelMaxIdleTimeSeconds": "server_channel_max_idle_time_s",
    "transactionTimeOut": "transaction_timeout_ms",
    "transactionCheckInterval": "transaction_check_interval_ms",
}


def _coerce(name: str, raw: str, f: dataclasses.Field[object]) -> object:
    text = str(raw).strip()
    kind = str(f.type)
    if "bool" in kind:
        return text.lower() == "true"
    if kind.startswith("int"):
        # as 4.9.3's setter reads it (Integer.parseInt / Long.parseLong); rocketstore's own: a long's range
        long = name in config_keys.JAVA_LONGS or name in config_keys.ROCKETSTORE_ONLY
        return java_integer(name, raw, text, long=long)
    return text


def load_broker_conf(path: str | None, *, store_dir: str | None = None, overrides: dict[str, str] | None = None
                     ) -> tuple[BrokerConfig, StoreConfig, dict[str, str]]:
    """(broker config, store config, raw properties) from a broker.conf (None: defaults).

    *overrides* are property-name values applied over the file (the CLI's flags); *store_dir* sets
    storePathRootDir when neither the file nor the overrides do.
    """
    props = read_properties_file(path) if path else {}
    if overrides:
        props.update({k: v for k, v in overrides.items() if v is not None})
    if store_dir is not None and "storePathRootDir" not in props:
        props["storePathRootDir"] = store_dir
    if "storePathRootDir" in props:
        props["storePathRootDir"] = os.path.abspath(os.path.expanduser(props["storePathRootDir"]))
    for name in ("brokerIP1", "brokerIP2"):
        ip = props.get(name, "").strip()
        if ip.startswith("[") and ip.endswith("]"):  # [::1]: an IPv6 literal as Java's InetAddress takes it
            props[name] = ip[1:-1]
    # 4.9.3's BrokerStartup: a slave's brokerId must be > 0 (it exits), a master's is 0 whatever the file
    # says, -1 included (it says nothing; a master registered with another id is no master to the name
    # servers and clients)
    slave = props.get("brokerRole", "").strip() == BrokerRole.SLAVE
    errors: list[str] = []  # the bad values of both halves, named in one error
    try:
        broker = BrokerConfig.from_properties(props, **({} if slave else {"broker_id": 0}))
    except StoreConfigError as exc:
        errors.append(str(exc))
    try:
        store = StoreConfig.from_properties(props)
    except StoreConfigError as exc:
        errors.append(str(exc))
    if slave and not errors and broker.broker_id <= 0:
        errors.append("Slave's brokerId must be > 0 (brokerRole=SLAVE)")
    if errors:
        raise StoreConfigError("; ".join(errors))
    given = props.get("brokerId")
    if not slave and given is not None and java_integer("brokerId", given, given.strip(), long=True) != 0:
        logging.getLogger(__name__).warning("brokerId=%s acts as 0: a master's (brokerRole=%s) id is always "
                                            "0, as in 4.9.3", given.strip(), store.broker_role)
    return broker, store, props
