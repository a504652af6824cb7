"""Broker: a MessageStore behind a RemotingServer, with topic / group / offset tables, client bookkeeping,
long polling and name server registration.

    broker = Broker(BrokerConfig(...), StoreConfig(...))
    await broker.start()          # binds, opens the store, loads config/*.json, registers, serves
    ...
    await broker.close()          # unregisters, closes connections, persists offsets, closes the store

The listening socket is bound before the store opens so that with ``listenPort=0`` the store host (the
STOREHOST of every record and the address in every offset message id) is the real ``brokerIP1:port`` (a
brokerIP1 that is a host name resolved to its address first).  Before anything is bound, the start refuses
a store it would misread (config_keys: a 4.9.3 commitlog left in its default place or spread over
directories, a DLedger commitlog) and warns of a deleteWhen that names no hour and of a new store beside
4.9.3's default one.
Handlers live in one module per request family (send, pull, clients, offsets, query, admin); each gets
this object.  Every put is counted by :meth:`Broker.count_put` into :attr:`Broker.stats` (broker_stats.py),
whose sampler runs as one of the broker's tasks.  Loop-bound: create, start and close it on one event loop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import ssl
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Literal

from rocketstore.address_server import AddressServerWatcher, address_server_url
from rocketstore.broker import (
    admin,
    client_handlers,
    config_keys,
    consume_queue_admin,
    consumer_calls,
    group_admin,
    offset_handlers,
    pull,
    query,
    reply,
    reset_offset,
    retry,
    send,
    stats_admin,
    transactions,
)
from rocketstore.broker.acl import ACL_EXCEPTION, PlainAcl
from rocketstore.broker.broker_stats import BrokerStats
from rocketstore.broker.client_handlers import QueueLocks
from rocketstore.broker.clients import ClientRegistry, liveness_ms
from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.config_files import BackgroundWriter, FailureLog
from rocketstore.broker.durable_waits import DurableWaits
from rocketstore.broker.groups import SubscriptionGroupTable
from rocketstore.broker.ha import HAClient, HAServer
from rocketstore.broker.long_poll import PullHold
from rocketstore.broker.offsets import ConsumerOffsetTable
from rocketstore.broker.registration import Registrar
from rocketstore.broker.schedule import ScheduleService
from rocketstore.broker.slave_sync import SlaveSync
from rocketstore.broker.topics import TopicTable
from rocketstore.errors import RemotingError, StoreConfigError
from rocketstore.message.batch import MessageBatch
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.properties import waits_store_msg_ok
from rocketstore.message.record import Message
from rocketstore.remoting import busy_poll
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import NotifyConsumerIdsChangedRequestHeader
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.tls import TlsConfig
from rocketstore.remoting.transport import Connection
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus, PutResult

__all__ = ["Broker"]

log = logging.getLogger(__name__)

_monotonic_ns = time.monotonic_ns
_PUT_OK = PutMessageStatus.PUT_OK
#: statuses of a put whose record was appended (the flush or the replica may have failed after)
_APPENDED = frozenset({PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                       PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE})
#: refusals of a store that takes no write now (a slave, closed, not writable, its append lock busy): 4.9.3's
#: checkStoreStatus answers them before it times the put, so they are neither failed puts nor latencies
_NOT_ATTEMPTED = frozenset({PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.OS_PAGECACHE_BUSY})


#: ClientHousekeepingService scans every 10 s
CLIENT_SCAN_INTERVAL_S = 10.0


def _log_recovery(store: MessageStore) -> None:
    """One line at start on how the store was found and recovered (4.9.3 logs it in store.log): a WARNING
    after a crash (the abort file was there) or when recovery cut bytes, INFO otherwise."""
    rec = store.recovery
    alarming = rec.abnormal or rec.truncated_bytes or rec.dropped_queue_entries
    level = logging.WARNING if alarming else logging.INFO
    log.log(level, "store %s opened: last shutdown %s; commitlog recovered to offset %d (%d records checked, "
            "%d bytes cut%s%s)", store.config.store_path_root_dir,
            "abnormal (abort file present)" if rec.abnormal else "clean", rec.valid_end, rec.records_checked,
            rec.truncated_bytes, f": {rec.first_invalid_reason}" if rec.first_invalid_reason else "",
            f", {rec.dropped_queue_entries} consume-queue entries past it dropped"
            if rec.dropped_queue_entries else "")


async def _resolved_ip(loop: asyncio.AbstractEventLoop, host: str) -> str:
    """*host* if it is an IP address, else the address it resolves to (an IPv4 one first, as Java's
    InetAddress prefers); StoreConfigError naming brokerIP1 when it does not resolve."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return host
    except ValueError:
        pass
    try:
        infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise StoreConfigError(f"brokerIP1={host} does not resolve to an address ({exc})") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return str(infos[0][4][0])


class Broker:
    def __init__(self, config: BrokerConfig | None = None, store_config: StoreConfig | None = None, *,
                 config_path: str | None = None, tls: TlsConfig | None = None,
                 properties: dict[str, str] | None = None) -> None:
        """*config_path*: the broker.conf the broker was started with (``-c``), where UPDATE_BROKER_CONFIG
        writes the changed properties, as 4.9.3 does; None: ``<storePathRootDir>/config/broker.properties``.
        *properties*: that file's properties; the ones no BrokerConfig / StoreConfig setting takes are kept,
        shown by GET_BROKER_CONFIG and written back by UPDATE_BROKER_CONFIG, as 4.9.3 keeps them.
        *tls*: serve TLS connections too (or only) as it says (:mod:`rocketstore.remoting.tls`), and open the
        broker's own connections (to the name servers, a slave's to its master) over TLS when its
        ``tls.enable`` says so (not given: when its mode is enforcing), as 4.9.3's broker does with the
        useTLS of the NettyClientConfig it is started with; without *tls* those follow the process
        (:func:`rocketstore.remoting.tls.use_client_tls`)."""
        self.config = config or BrokerConfig()
        self.store_config = store_config or StoreConfig()
        self.config_path = config_path
        #: properties kept without effect (broker.config_keys) and the start file's other keys: name -> text
        self.extra_properties = stats_admin.start_file_extras(properties or {})
        #: logged once by start(): the given keys that act on nothing here (thread pools, DLedger, typos, ...)
        self._start_file_notice = stats_admin.start_file_notice(properties or {})
        self.router = RequestRouter()
        self.queue_locks = QueueLocks()
        for module in (send, pull, client_handlers, offset_handlers, query, retry, admin, consumer_calls,
                       transactions, reset_offset, consume_queue_admin, group_admin, stats_admin, reply):
            module.register(self.router, self)
        self.server = RemotingServer(self.router, idle_timeout_s=float(self.config.server_channel_max_idle_time_s),
                                     on_connection_closed=self._connection_closed, tls=tls)
        #: the "VIP" port, listenPort - 2, serving the same requests: 4.9.3's brokers listen there too, and a
        #: Java slave's config sync (topics, offsets, delay offsets, groups) and clients with
        #: vipChannelEnabled connect to it rather than to listenPort
        self.vip_server = RemotingServer(self.router,
                                         idle_timeout_s=float(self.config.server_channel_max_idle_time_s),
                                         on_connection_closed=self._connection_closed, tls=tls)
        self._vip_listening = False
        self.tls = tls
        #: the broker's own connections: a context (TLS), None (plain) or "process" (use_client_tls's choice)
        self.client_ssl_context: ssl.SSLContext | None | Literal["process"] = \
            tls.own_client_context() if tls is not None else "process"
        #: aclEnable: every request is checked against the ACL files of rocketmqHome before its handler
        self.acl: PlainAcl | None = None
        if self.config.acl_enable:
            self.acl = PlainAcl(self.config.acl_home())
            self.router.guard = self._acl_guard
            if not self.acl.config.accounts and not self.acl.config.global_white:
                log.warning("aclEnable=true but no ACL account or white address under %s/conf: every request "
                            "will be refused until plain_acl.yml is written there", self.acl.home)
        self.clients = ClientRegistry(self.config.channel_expired_timeout_ms)
        self._store: MessageStore | None = None
        self.topics: TopicTable
        self.groups: SubscriptionGroupTable
        self.offsets: ConsumerOffsetTable
        self.pull_hold: PullHold
        self._durable_waits: DurableWaits
        self.registrar: Registrar | None = None
        #: the address server the name server list is read from (fetchNamesrvAddrByAddressServer), else None
        self.address_server: AddressServerWatcher | None = None
        #: replication: the HA port's server on masters; the HA client and the config sync on slaves
        self.ha_server: HAServer | None = None
        #: the HA port the start asked for (BrokerConfig.ha_port()); GET_BROKER_CONFIG shows the one in use
        #: while haListenPort still says this one (it differs when listenPort + 1 was taken, or was 0)
        self.ha_port_asked: int | None = None
        self.ha_client: HAClient | None = None
        self.slave_sync: SlaveSync | None = None
        #: SYNC_MASTER: a send is answered once a slave has its record (or says why not); a plain
        #: attribute, read once per send (UPDATE_BROKER_CONFIG's brokerRole sets it)
        self.sync_master = self.store_config.broker_role == BrokerRole.SYNC_MASTER
        self.schedule: ScheduleService | None = None
        #: writes op records for END_TRANSACTION; checks open half messages on masters (started there only)
        self.transactions = transactions.TransactionCheckService(self)
        self.address = ""
        self.store_host: HostAddress | None = None
        self.start_time_ms = 0
        self._tasks: list[asyncio.Task[None]] = []
        #: writers of other files the offsets timer writes again while their last write failed (as
        #: topics.json's and subscriptionGroup.json's): broker.conf after UPDATE_BROKER_CONFIG
        self.retried_writers: list[BackgroundWriter[Any]] = []
        #: store work that may block (opening, closing, queries) runs here, off the event loop
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rocketstore-broker")
        #: the statistics of GET_BROKER_RUNTIME_INFO / VIEW_BROKER_STATS_DATA (broker_stats.py); counted
        #: on the loop, sampled by a task of their own while the broker runs
        self.stats = BrokerStats(self.config.broker_cluster_name)
        #: the version of the broker's configuration, raised by each UPDATE_BROKER_CONFIG (GET_BROKER_CONFIG's
        #: ``version``, as 4.9.3's Configuration keeps one)
        self.config_version = DataVersion(int(time.time() * 1000), 0)
        #: messages handed out per (group, topic) over the last minute: GET_CONSUME_STATS's consumeTps
        self.closed = False

    @property
    def store(self) -> MessageStore:
        if self._store is None:
            raise RuntimeError("the broker is not started")
        return self._store

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def auto_delete_unused_stats(self) -> bool:
        """4.9.3's autoDeleteUnusedStats (default false, a kept property UPDATE_BROKER_CONFIG may change): a
        deleted topic's or group's statistics items go with it; otherwise they stay, as in 4.9.3, and a topic
        created again under the same name counts on from them."""
        return self.extra_properties.get("autoDeleteUnusedStats") == "true"

    def _ha_settings(self) -> dict[str, str]:
        """The kept properties replication reads at every use, as 4.9.3 does (haSlaveFallbehindMax,
        haTransferBatchSize, haSendHeartbeatInterval, haHousekeepingInterval): UPDATE_BROKER_CONFIG's
        changes act at once."""
        return self.extra_properties

    def forget_stats_of_topics(self, topics: Iterable[str]) -> None:
        """The statistics of *topics* (deleted, or their consume queues dropped as unused) go when
        :attr:`auto_delete_unused_stats` says so (4.9.3's onTopicDeleted, which deleteTopic and
        cleanUnusedTopic call then)."""
        if self.auto_delete_unused_stats:
            for topic in dict.fromkeys(topics):
                self.stats.topic_deleted(topic)

    # --- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        cfg = self.config
        misplaced = (config_keys.commitlog_paths_error(self.store_config.store_path_commit_log)
                     or config_keys.commitlog_left_in_java_default(self.store_config.store_path_root_dir,
                                                                   self.store_config.store_path_commit_log))
        # a 4.9.3 commitlog this broker would not find whole (or, DLedger's, would not read): open nothing
        refused = [text for text in (misplaced, config_keys.dledger_commitlog_error(
            self.extra_properties.get("enableDLegerCommitLog") == "true",
            self.extra_properties.get("dLegerSelfId"), self.store_config.store_path_root_dir)) if text]
        if not 0 <= cfg.ha_port() <= 65535:  # (70000 served HA on 4464, or was a bare OverflowError)
            refused.append(f"haListenPort {cfg.ha_port()} out of range (0 .. 65535)")
        if refused:
            raise StoreConfigError("; ".join(refused))
        if self._start_file_notice:
            log.warning("%s", self._start_file_notice)
        delete_when = config_keys.delete_when_notice(self.store_config.delete_when)
        if delete_when:
            log.warning("%s", delete_when)
        java_store = config_keys.new_store_beside_java_default(self.store_config.store_path_root_dir,
                                                               self.store_config.store_path_commit_log)
        if java_store:
            log.warning("%s", java_store)
        loop = asyncio.get_running_loop()
        ip = cfg.advertised_ip()
        # a brokerIP1 that is a host name (a container's DNS name) is registered as it is, and the records'
        # STOREHOST holds the address it resolves to, as 4.9.3's InetSocketAddress(brokerIP1, listenPort);
        # resolved before anything is bound (one that does not resolve left both listeners bound)
        store_ip = await _resolved_ip(loop, ip)
        await self.server.start(cfg.listen_host, cfg.listen_port, start_serving=False)
        if cfg.listen_port > 2:  # a port the OS picked (0) has no VIP port a peer could derive
            try:
                await self.vip_server.start(cfg.listen_host, cfg.listen_port - 2, start_serving=False)
                self._vip_listening = True
            except OSError as exc:  # RocketMQ's would not start; only the Java peers' VIP calls miss it
                log.warning("VIP port %d (listenPort - 2) is taken (%s): Java slaves cannot sync the "
                            "configuration from this broker", cfg.listen_port - 2, exc)
        self.address = f"[{ip}]:{self.server.port}" if ":" in ip else f"{ip}:{self.server.port}"
        store_address = f"[{store_ip}]:{self.server.port}" if ":" in store_ip else \
            f"{store_ip}:{self.server.port}"
        self.store_host = parse_host(store_address)
        self.store_config = self.store_config.replace(store_host=store_address)
        try:
            if self.acl is not None:
                self.acl.start_watch()  # edits of the ACL files take effect with or without traffic
            self._store = await loop.run_in_executor(self._executor, MessageStore.open, None, self.store_config)
            _log_recovery(self._store)
            config_dir = self.store_config.config_dir
            # each table is set only once it has loaded: close() persists the ones set, and one whose file
            # could not be read (CorruptFileError) must not be written over it as an empty table
            topics = TopicTable(cfg, config_dir)
            topics.load()
            self.topics = topics
            groups = SubscriptionGroupTable(config_dir, auto_create=cfg.auto_create_subscription_group)
            groups.load()
            self.groups = groups
            offsets = ConsumerOffsetTable(config_dir)
            offsets.load()
            self.offsets = offsets
            try:
                self.topics.persist()
            except OSError:
                # a full disk: logged with the file's name by the table's writer, written again once it can be
                # (_persist_offsets_loop); 4.9.3's broker starts too (ConfigManager.persist only logs)
                pass
            self.pull_hold = PullHold(self.store.max_offset,
                                      check_interval_s=5.0 if cfg.long_polling_enable else cfg.short_polling_time_ms / 1000)
            self.store.add_dispatch_listener(self.pull_hold.on_dispatch)
            self._durable_waits = DurableWaits(self.store, loop, self.store_config.sync_flush_timeout_ms / 1000)
            if cfg.busy_poll_micros:
                poller = busy_poll.enable(loop, cfg.busy_poll_micros)
                if poller is not None:
                    # sends waiting for a sync wait for the syncing thread, which needs the GIL to answer;
                    # the dispatch thread (pull answers, long polls) needs it once it has gathered records
                    waits, store = self._durable_waits, self.store
                    poller.add_blocker(lambda: len(waits) > 0)
                    poller.add_due(lambda: store.dispatch_due_at)
            self.pull_hold.start()
            # messageTimeup sets waitStoreMsgOK false: a delivery waits neither for the disk nor for a
            # SYNC_MASTER's slave (one that did would fail without a slave and be written again and again).
            # A slave loads the delay offsets too, as 4.9.3's store does, and answers GET_ALL_DELAY_OFFSET
            # and the runtime info with them, but delivers nothing and never writes them
            schedule = ScheduleService(self.store, config_dir, self._deliver_delayed,
                                       lambda: int(time.time() * 1000))
            schedule.load()
            self.schedule = schedule
            if self.store_config.broker_role != BrokerRole.SLAVE:
                self.schedule.start()
                self.transactions.correct_offsets()
                self.transactions.start()
            self.start_time_ms = int(time.time() * 1000)
            self.stats.store.boot_time_ms = self.start_time_ms
            # RocketMQ's haListenPort = listenPort + 1; a broker on a port the OS picked lets it pick this too
            ha_port = self.ha_port_asked = cfg.ha_port()
            # every role listens (4.9.3's HAService.start runs its AcceptSocketService on a slave too)
            self.ha_server = HAServer(self.store, cfg.listen_host, ha_port, settings=self._ha_settings)
            try:
                await self.ha_server.start()
            except OSError as exc:
                if not ha_port or ha_port != cfg.listen_port + 1:
                    raise
                # listenPort + 1 (the default, or a haListenPort saying it, as every broker.conf an
                # UPDATE_BROKER_CONFIG wrote does) is only a convention: a slave learns the HA address from
                # the name server, so a taken port need not stop the broker (RocketMQ's would not start)
                log.warning("HA port %d (listenPort + 1) is taken (%s): slaves are served on a port the OS "
                            "picks, registered as haServerAddr; set haListenPort to choose one", ha_port, exc)
                self.ha_server = HAServer(self.store, cfg.listen_host, 0, settings=self._ha_settings)
                await self.ha_server.start()
            ha_port = self.ha_server.port  # haListenPort 0: the port the OS gave
            await self.server.start_serving()
            if self._vip_listening:
                await self.vip_server.start_serving()
            fetch_namesrv_addrs = self.extra_properties.get("fetchNamesrvAddrByAddressServer", "").lower() == "true"
            if not cfg.namesrv_addrs and fetch_namesrv_addrs:
                # 4.9.3's BrokerController with no namesrvAddr: the list from the address server of
                # rmqAddressServerDomain / rmqAddressServerSubGroup, every 2 minutes (read at start here too,
                # in the background: the registrar registers once it has the list)
                domain = self.extra_properties.get("rmqAddressServerDomain", "").strip() or None
                subgroup = self.extra_properties.get("rmqAddressServerSubGroup", "").strip() or None
                self.address_server = AddressServerWatcher(address_server_url(domain, subgroup),
                                                           self._namesrv_addrs_changed)
            self.registrar = Registrar(
                cfg.namesrv_addrs, cluster_name=cfg.broker_cluster_name, broker_name=cfg.broker_name,
                broker_id=cfg.broker_id, broker_addr=self.address,
                ha_server_addr=f"{cfg.broker_ip2 or ip}:{ha_port}", body=self._register_body,
                period_s=cfg.register_period_s, timeout_s=cfg.register_broker_timeout_ms / 1000,
                compressed=cfg.compressed_register, on_order_topics=self.topics.update_order_flags,
                ssl_context=self.client_ssl_context)
            await self.registrar.start()
            if self.address_server is not None:
                self.address_server.start(at_once=True)
            if self.store_config.broker_role == BrokerRole.SLAVE:
                registrar = self.registrar
                self.ha_client = HAClient(self.store,
                                          lambda: cfg.ha_master_address or registrar.master_ha_addr,
                                          settings=self._ha_settings)
                self.stats.store.replica_puts = self.store.count_replicated()  # 4.9.3's slave counts them as puts
                self.ha_client.start()
                self.slave_sync = SlaveSync(self, lambda: registrar.master_addr,
                                            ssl_context=self.client_ssl_context)
                self.slave_sync.start()
            self._tasks.append(loop.create_task(self._persist_offsets_loop()))
            self._tasks.append(loop.create_task(self._scan_clients_loop()))
            self._tasks.append(loop.create_task(self.stats.run()))
        except BaseException:
            await self.close()
            raise

    def _namesrv_addrs_changed(self, addrs: list[str]) -> None:
        """The address server gave a new name server list: register with it from now on."""
        if self.registrar is not None:
            self.registrar.update_namesrv_addrs(addrs)

    def _acl_guard(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        assert self.acl is not None
        why = self.acl.check(request.code, request.ext_fields, request.body, connection.peer[0])
        if why is None:
            return None
        log.info("ACL refused request code %s from %s: %s", request.code, connection.peer_address, why)
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{ACL_EXCEPTION}: {why}")

    def _register_body(self, topics: Iterable[str] | None = None) -> RegisterBrokerBody:
        """What is registered: the whole topic table (or the *topics* of it) at its data version."""
        return RegisterBrokerBody(self.topics.registration_view(self.config.broker_permission, topics),
                                  self.topics.data_version)

    async def close(self) -> None:
        """Unregister, stop serving, persist the tables and close the store cleanly.  Idempotent."""
        if self.closed:
            return
        self.closed = True
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        if self.address_server is not None:
            await self.address_server.close()
        if self.registrar is not None:
            await self.registrar.close(unregister=True)
        await self.server.close()
        if self._vip_listening:
            await self.vip_server.close()
        if self.acl is not None:
            self.acl.stop_watch()
        for service in (self.ha_client, self.slave_sync, self.ha_server):
            if service is not None:
                await service.close()
        if self.config.busy_poll_micros:
            busy_poll.enable(asyncio.get_running_loop(), 0)  # the loop may outlive the broker (tests, embedders)
        if self.schedule is not None:
            await self.schedule.close()
        await self.transactions.close()
        if self._store is not None:
            # the tables exist once the store is open, unless start() failed half-way
            pull_hold = getattr(self, "pull_hold", None)
            if pull_hold is not None:
                pull_hold.close()
            for table in (getattr(self, "topics", None), getattr(self, "groups", None)):
                if table is not None:
                    try:
                        await table.flush()  # the writes under way end first (written again just below)
                    except OSError:
                        pass  # logged by the writer
            # each file is tried, whatever became of the one before (a full disk, a file made unwritable)
            writes: list[tuple[str, Callable[[], object]]] = []
            if self.schedule is not None and self.schedule.started:
                writes.append((self.schedule.path, partial(self.schedule.persist, force=True)))
            if hasattr(self, "offsets"):
                writes.append((self.offsets.path, partial(self.offsets.persist, force=True)))
            for table in (getattr(self, "topics", None), getattr(self, "groups", None)):
                if table is not None:
                    writes.append((table.path, table.persist))
            for path, write in writes:
                try:
                    write()
                except OSError as exc:
                    log.error("cannot write %s at shutdown: %s", path, exc)
            # the sends still waiting for a sync are answered (a timeout: their connections are closed by
            # now) while the store is attached, as their answers read it; stop listening before the close's
            # own flush wakes them
            waits = getattr(self, "_durable_waits", None)
            if waits is not None:
                waits.close()
            store, self._store = self._store, None
            await asyncio.get_running_loop().run_in_executor(self._executor, store.close)
            log.info("store %s closed cleanly at commitlog offset %d", store.config.store_path_root_dir,
                     store.max_commit_log_offset)
        self._executor.shutdown(wait=True)

    async def run_blocking(self, fn: Any, *args: Any) -> Any:
        """Run store work that may block on the broker's executor."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def put(self, message: Message, *, apply_delay: bool = True, wait: bool = True,
                  sent: bool = False) -> PutResult:
        """Store one message.  Under SYNC_FLUSH the put runs on the loop without waiting and the answer
        waits for the group commit on a future (:class:`DurableWaits`), as RocketMQ's asyncPutMessage,
        unless *wait* is False or the message's WAIT is not Java's true (the send handler passes the request's WAIT,
        which it leaves out of the stored properties as RocketMQ does).
        ``apply_delay=False``: see MessageStore.put (the schedule service's deliveries); *sent*: the put of
        a send request (:meth:`count_put`)."""
        store = self.store
        if wait:
            wait = waits_store_msg_ok(message.properties)
        if not store.config.is_sync_flush:
            result = self.put_now(message, apply_delay=apply_delay, sent=sent)
        else:
            began_ns = _monotonic_ns()
            result = await self._durable(store.put(message, apply_delay=apply_delay, flush="later"), wait)
            self.count_put(result, began_ns, sent)
        if self.sync_master:
            result = await self._replicated(result, wait)
        return result

    async def _deliver_delayed(self, message: Message) -> PutResult:
        """ScheduleService's put of a due message to its real topic: its DELAY not applied again, waiting
        neither for the disk nor for a slave (see start), and counted as 4.9.3's delivery with its default
        enableScheduleMessageStats: a put of that topic (TOPIC_PUT_NUMS / TOPIC_PUT_SIZE, BROKER_PUT_NUMS)
        and a get of SCHEDULE_CONSUMER from SCHEDULE_TOPIC_XXXX (BrokerStats.delayed_delivered)."""
        result = await self.put(message, apply_delay=False, wait=False, sent=True)
        if result.status is _PUT_OK:
            self.stats.delayed_delivered(result.message_count, result.wrote_bytes)
        return result

    def put_unsynced(self, item: Message | MessageBatch) -> PutResult:
        """SYNC_FLUSH: a send's put (one message or a batch) made on the loop without waiting for the disk
        or asking for the sync: its answer waits on :attr:`durable_waits` (which asks, once per loop
        iteration), and :meth:`count_put` counts it once final (the caller takes the start time)."""
        store = self.store
        if isinstance(item, MessageBatch):
            return store.put_batch(item, flush="later")
        return store.put(item, flush="later")

    def count_put(self, result: PutResult, began_ns: int = 0, sent: bool = False) -> None:
        """The statistics of a put whose answer is final: messages and bytes per stored topic when its record
        was appended (whatever the flush or the replica said after, as 4.9.3 counts at the append), else
        one more failed put (nothing at all for a store that took no write: _NOT_ATTEMPTED); with *began_ns*
        (``time.monotonic_ns()`` before the put) its latency; *sent*: the put of a send request or a delayed
        delivery (TOPIC_PUT_NUMS / TOPIC_PUT_SIZE / BROKER_PUT_NUMS, broker_stats.py).  Every put the broker
        makes comes here: one dict lookup and a few int operations, no lock (measured: 0.43 us a send,
        0.16 us of them the two clock reads of the latency; the put_count increment this replaced took
        0.16 us)."""
        stats = self.stats.store
        status = result[0]
        if status is _PUT_OK or status in _APPENDED:
            # PutResult fields by index (a NamedTuple): 2 wrote_bytes, 5 message_count, 6 topic
            counter = stats.topic_puts.get(result[6])
            if counter is None:
                counter = stats.topic_counter(result[6])
            count = result[5]
            wrote = result[2]
            counter[0] += count
            counter[1] += wrote
            if sent:
                counter[2] += count
                counter[3] += wrote
                counter[4] += 1
            if status is _PUT_OK:
                ha = self.ha_server
                if ha is not None and ha.slaves:  # wake the transfers only when a slave is there to send to
                    ha.data_written()
        elif status in _NOT_ATTEMPTED:
            return
        else:
            stats.put_failed_count += 1
        if began_ns:
            elapsed_ms = (_monotonic_ns() - began_ns) // 1_000_000
            if elapsed_ms <= 0:
                stats.bands[0] += 1
            else:
                stats.put_took(elapsed_ms)

    @property
    def put_count(self) -> int:
        """Messages stored since start (the runtime info's msgPutTotalTodayNow)."""
        return self.stats.store.put_message_count

    @property
    def get_count(self) -> int:
        """Messages handed out by pulls since start (msgGetTotalTodayNow)."""
        return self.stats.store.get_transferred_count

    @property
    def durable_waits(self) -> DurableWaits:
        return self._durable_waits

    async def _durable(self, result: PutResult, wait: bool) -> PutResult:
        """*result* (a SYNC_FLUSH put made with ``flush="later"``) once its record is durable, or with the
        status that says why not; at once when the sender does not *wait* (WAIT=false)."""
        if result.status is not PutMessageStatus.PUT_OK:
            return result
        end = result.commit_log_offset + result.wrote_bytes
        if not wait:
            self._durable_waits.ask_sync(end)
            return result
        status = await self._durable_waits.wait(end)
        return result if status is PutMessageStatus.PUT_OK else result._replace(status=status)

    def put_now(self, message: Message, *, apply_delay: bool = True, sent: bool = False) -> PutResult:
        """Store one message on the calling thread (the loop): only for ASYNC_FLUSH, where a put does not
        wait for the disk (the send handler's immediate path checks that first).  *sent*: see count_put."""
        began_ns = _monotonic_ns()
        result = self.store.put(message, apply_delay=apply_delay)
        self.count_put(result, began_ns, sent)
        return result

    async def put_batch(self, messages: list[Message] | MessageBatch, *, wait: bool = True,
                        sent: bool = False) -> PutResult:
        """put_batch; under SYNC_FLUSH as :meth:`put` (*wait*: the batch request's WAIT)."""
        store = self.store
        if not store.config.is_sync_flush:
            result = self.put_batch_now(messages, sent=sent)
        else:
            began_ns = _monotonic_ns()
            result = await self._durable(store.put_batch(messages, flush="later"), wait)
            self.count_put(result, began_ns, sent)
        if self.sync_master:
            result = await self._replicated(result, wait)
        return result

    async def _replicated(self, result: PutResult, wait: bool) -> PutResult:
        """SYNC_MASTER: *result* once a slave has acknowledged its record, else with SLAVE_NOT_AVAILABLE
        (no slave fit to wait for) or FLUSH_SLAVE_TIMEOUT (none acknowledged within slaveTimeout); the
        record is stored either way.  A replica failure outranks the flush's status, as in 4.9.3."""
        if not wait or result.status not in (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT):
            return result
        if self.ha_server is None:  # not started (every started broker listens for slaves)
            return result._replace(status=PutMessageStatus.SLAVE_NOT_AVAILABLE)
        status = await self.ha_server.wait_replicated(result.commit_log_offset + result.wrote_bytes,
                                                      self.store_config.slave_timeout_ms / 1000)
        return result if status is PutMessageStatus.PUT_OK else result._replace(status=status)

    def put_batch_now(self, messages: list[Message] | MessageBatch, *, sent: bool = False) -> PutResult:
        """put_batch on the calling thread: only for ASYNC_FLUSH, as :meth:`put_now`."""
        began_ns = _monotonic_ns()
        result = self.store.put_batch(messages)
        self.count_put(result, began_ns, sent)
        return result

    # --- background work ------------------------------------------------------------------------------

    async def _persist_offsets_loop(self) -> None:
        """Every flushConsumerOffsetInterval: consumerOffset.json (4.9.3's scheduled persist), and
        topics.json / subscriptionGroup.json again if their last write failed (BackgroundWriter.retry).  A
        failure that goes on (a full disk) is logged once, not every interval (FailureLog)."""
        interval_s = max(0.1, self.config.flush_consumer_offset_interval_ms / 1000)
        failures = FailureLog(log, self.offsets.path)
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.run_blocking(self.offsets.persist)
            except OSError as exc:
                failures.failed(exc)
            else:
                failures.succeeded()
            writers: list[BackgroundWriter[Any]] = [self.topics.writer, self.groups.writer, *self.retried_writers]
            for writer in writers:
                writer.retry()

    async def _scan_clients_loop(self) -> None:
        while True:
            await asyncio.sleep(CLIENT_SCAN_INTERVAL_S)
            self.scan_clients()

    def scan_clients(self) -> None:
        """One pass of 4.9.3's ClientHousekeepingService: drop (and close) clients without a heartbeat for
        channelExpiredTimeout, and tell their groups.  By the monotonic clock, see ``clients.liveness_ms``."""
        changed, dropped = self.clients.expire(liveness_ms())
        for connection in dict.fromkeys(dropped):  # (once each: a connection is listed per group it was in)
            if isinstance(connection, Connection):
                log.warning("client connection %s sent no heartbeat for %d s: closed", connection.peer_address,
                            self.clients.channel_expired_timeout_ms // 1000)
                connection.close()
        for group in changed:
            self.notify_consumer_ids_changed(group)

    def _connection_closed(self, connection: Connection) -> None:
        # 4.9.3's doChannelCloseEvent tells the group whatever its notifyConsumerIdsChangedEnable says (the
        # group's flag quiets joins and UNREGISTER_CLIENT only): the others take a dead member's queues now
        groups = self.clients.connection_closed(connection)
        if groups:  # (a producer's or an admin's close is no news: a CLI command closes one per run)
            log.info("consumer connection %s closed: left group(s) %s", connection.peer_address,
                     ", ".join(groups))
        for group in groups:
            self.notify_consumer_ids_changed(group, group_may_refuse=False)

    # --- services for the handlers --------------------------------------------------------------------

    def topic_created(self) -> None:
        """A topic was created or changed: register with the name servers again soon."""
        if self.registrar is not None:
            self.registrar.request_registration()

    def topic_config_changed(self, topic: str, before: DataVersion) -> asyncio.Task[None] | None:
        """An admin created, updated or deleted *topic* (the table was at data version *before*): register
        that topic alone (deleted: no topic, the new data version only) with the name servers now, as 4.9.3's
        updateAndCreateTopic does (registerIncrementBrokerData); a heartbeat's new %RETRY% topic is registered
        so too, and the heartbeat waits for it, as 4.9.3's waits for its registration, and so are the
        %RETRY% / %DLQ% topics a send-back or a dead letter's send creates (retry.register_created), and the topics
        sends auto-create (not waited for: 4.9.3 registers those oneway); the other changes (permissions) register
        the whole table soon.  The registration's task (see
        Registrar.register_increment), None when nothing is registered."""
        if self.registrar is not None and self.topics.data_version != before:
            return self.registrar.register_increment(self._register_body((topic,)), before)
        return None

    def config_changes(self) -> int:
        """How many changes the topic and group tables have had: a send compares it before and after its
        checks, and one that created its topic (or group) is answered once that is written."""
        return self.topics.writer.generation + self.groups.writer.generation

    async def config_written(self) -> None:
        """Wait until topics.json and subscriptionGroup.json hold every change made so far (written off the
        loop); the OSError of a write that failed."""
        await self.topics.flush()
        await self.groups.flush()

    async def config_written_quietly(self) -> None:
        """:meth:`config_written`, a failed write only logged (by the writer), as 4.9.3's persist only logs."""
        try:
            await self.config_written()
        except OSError:
            pass

    def answer_when_config_written(self, reply: Any, answer: RemotingCommand | bytes) -> None:
        """Give *answer* (to ``Connection.answer_later``'s *reply*) once :meth:`config_written_quietly`."""
        async def later() -> None:
            await self.config_written_quietly()
            reply(answer)

        asyncio.get_running_loop().create_task(later())

    def notify_consumer_ids_changed(self, group: str, *, group_may_refuse: bool = True) -> None:
        """Send NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every client of *group*, so they rebalance now.
        *group_may_refuse*: the group's notifyConsumerIdsChangedEnable applies (the broker's always does)."""
        if not self.config.notify_consumer_ids_changed_enable:
            return
        cfg = self.groups.get(group) if group_may_refuse and hasattr(self, "groups") else None
        if cfg is not None and not cfg.notify_consumer_ids_changed_enable:
            return
        info = self.clients.group(group)
        if info is None:
            return
        ext = NotifyConsumerIdsChangedRequestHeader(consumer_group=group).to_ext_fields()
        for connection in list(info.channels):
            if isinstance(connection, Connection) and not connection.is_closed:
                command = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, ext, oneway=True)
                # written now where possible, as 4.9.3 does before it answers the heartbeat that changed the
                # group: the members rebalance (and commit the queues they give up) before the newcomer,
                # answered after them, asks where to start on those queues
                if not connection.oneway_now(command):
                    asyncio.get_running_loop().create_task(self.send_quietly(connection, command))

    @staticmethod
    async def send_quietly(connection: Connection, command: RemotingCommand) -> None:
        """A oneway request to a client (notification, transaction check, offset reset); a failure is logged."""
        try:
            await connection.oneway(command, 3.0)
        except RemotingError as exc:
            log.debug("cannot notify %s: %s", connection.peer_address, exc)
