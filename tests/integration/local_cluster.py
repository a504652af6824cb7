"""A name server + broker pair on 127.0.0.1 (ports picked by the OS) running on an event loop in a thread,
for tests that drive it with real clients from the test thread or from subprocesses.

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.namesrv_addr          # "127.0.0.1:PORT"
        cluster.call(lambda: cluster.broker.offsets.offsets("group", "topic"))   # runs on the loop
        cluster.run(some_coroutine())                                            # runs on the loop
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self, TypeVar

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import Producer, PullConsumer, SendResult, SessionCredentials
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.record import StoredMessage
from rocketstore.namesrv import NameServer
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import TlsConfig
from rocketstore.remoting.transport import ConnectionPool, new_event_loop, run
from rocketstore.store.config import BrokerRole, StoreConfig

T = TypeVar("T")

#: small segments: test data is tiny and a 1 GiB commitlog / 420 MB index file would be wasteful
SMALL_STORE: dict[str, Any] = {"mapped_file_size_commit_log": 8 << 20, "mapped_file_size_consume_queue": 20_000 * 20,
                               "max_hash_slot_num": 1000, "max_index_num": 4000, "preallocate_commit_log": False}


def run_within(fn: Callable[[], Coroutine[Any, Any, T]], timeout_s: float) -> T:
    """Run the coroutine *fn* makes on a fresh event loop (this thread), cancelled after *timeout_s*: a test's
    whole scenario, bounded so that a hang fails the test instead of the suite."""
    async def bounded() -> T:
        return await asyncio.wait_for(fn(), timeout_s)

    return run(bounded())


async def eventually(fn: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll *fn* (sync, or async: its coroutine is awaited) on the running loop until it returns something
    truthy; AssertionError after *timeout_s*."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {value!r})")
        await asyncio.sleep(0.05)


def acl_home(directory: Path, plain_acl_yml: str) -> Path:
    """A RocketMQ home whose conf/plain_acl.yml is *plain_acl_yml*, for ``LocalCluster(..., acl_enable=True,
    rocketmq_home=str(home))``."""
    (directory / "conf").mkdir(parents=True, exist_ok=True)
    (directory / "conf" / "plain_acl.yml").write_text(plain_acl_yml, encoding="utf-8")
    return directory


#: the two accounts of :func:`edited_topic_acl`: an application's and an admin's
ACL_APP = SessionCredentials("rocketstore-app", "s3cret-key-1")
ACL_ADMIN = SessionCredentials("rocketstore-adm", "s3cret-key-2")


def edited_topic_acl(perm: str, white: str = "") -> str:
    """A plain_acl.yml: *white* (a globalWhiteRemoteAddresses entry, or nothing), ACL_APP allowed *perm* on
    EditedTopic (and PUB|SUB on TBW102, nothing else by default), ACL_ADMIN an admin."""
    return f"""\
{white}accounts:
  - accessKey: {ACL_APP.access_key}
    secretKey: {ACL_APP.secret_key}
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - EditedTopic={perm}
      - TBW102=PUB|SUB
  - accessKey: {ACL_ADMIN.access_key}
    secretKey: {ACL_ADMIN.secret_key}
    admin: true
"""


async def acl_send_status(producer: Producer, topic: str = "EditedTopic") -> str:
    """SEND_OK, or the AclException message the broker refused the send with."""
    try:
        return (await producer.send(topic, b"body")).status
    except BrokerError as exc:
        assert exc.remark is not None and "AclException" in exc.remark, exc.remark
        return exc.remark.rsplit(": ", 1)[-1]


class LocalCluster:
    def __init__(self, store_dir: Path | str, *, broker_name: str = "broker-a", timeout_s: float = 20.0,
                 store_overrides: dict[str, Any] | None = None, tls: TlsConfig | None = None,
                 namesrv_count: int = 1, **broker_overrides: Any) -> None:
        """*namesrv_count*: name servers the broker registers with (``namesrvs``; ``namesrv`` is the first)."""
        self.namesrv_count = namesrv_count
        self.namesrvs: list[NameServer] = []
        self.store_dir = str(store_dir)
        self.broker_name = broker_name
        self.timeout_s = timeout_s
        self.broker_overrides = broker_overrides
        self.store_overrides = {**SMALL_STORE, **(store_overrides or {})}
        self.tls = tls  # the name server and the broker serve TLS as it says
        self.loop = new_event_loop()  # the kind ROCKETSTORE_EVENT_LOOP says, as the CLI runs
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-cluster", daemon=True)
        self.namesrv: NameServer
        self.broker: Broker

    def __enter__(self) -> Self:
        self.thread.start()
        try:
            self.run(self._start())
        except BaseException:
            self._stop_loop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _start(self) -> None:
        for _ in range(self.namesrv_count):
            namesrv = NameServer(tls=self.tls)
            self.namesrvs.append(namesrv)
            await namesrv.start("127.0.0.1", 0)
        self.namesrv = self.namesrvs[0]
        config = BrokerConfig(broker_name=self.broker_name, listen_port=0,
                              namesrv_addr=";".join(n.address for n in self.namesrvs),
                              listen_host="127.0.0.1", broker_ip1="127.0.0.1", **self.broker_overrides)
        self.broker = Broker(config, StoreConfig(store_path_root_dir=self.store_dir, **self.store_overrides),
                             tls=self.tls)
        await self.broker.start()

    def start_broker(self, store_dir: Path | str, broker_name: str = "broker-b") -> Broker:
        """Another broker, on its own store (small segments as the first's), registering with this cluster's
        name server; the caller closes it (``cluster.run(broker.close())``) before the cluster."""
        async def start() -> Broker:
            config = BrokerConfig(broker_name=broker_name, namesrv_addr=self.namesrv_addr, listen_port=0,
                                  listen_host="127.0.0.1", broker_ip1="127.0.0.1")
            broker = Broker(config, StoreConfig(store_path_root_dir=str(store_dir), **SMALL_STORE))
            await broker.start()
            return broker

        return self.run(start())

    def start_slave(self, store_dir: Path | str, broker_name: str, broker_id: int = 1,
                    store_overrides: dict[str, Any] | None = None, **broker_overrides: Any) -> Broker:
        """A SLAVE broker *broker_name* with *broker_id*, on its own store (small segments, then
        *store_overrides*), registering with this cluster's name server (which tells it its master); the
        caller closes it (``cluster.run(slave.close())``)."""
        config = BrokerConfig(broker_name=broker_name, broker_id=broker_id, namesrv_addr=self.namesrv_addr,
                              listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1",
                              **broker_overrides)
        slave = Broker(config, StoreConfig(store_path_root_dir=str(store_dir), broker_role=BrokerRole.SLAVE,
                                           **{**SMALL_STORE, **(store_overrides or {})}))
        self.run(slave.start())
        return slave

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    @property
    def broker_addr(self) -> str:
        return self.broker.address

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s or self.timeout_s)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def create_topic(self, topic: str, queues: int = 1, timeout_s: float = 20.0) -> None:
        """Create *topic* with *queues* read and write queues on this broker (an admin request, from the
        calling thread) and wait until the name server routes it."""
        async def create() -> None:
            async with AdminClient(self.namesrv_addr) as admin:
                await admin.create_topic(topic, broker_addr=self.broker_addr, read_queue_nums=queues,
                                         write_queue_nums=queues)

        run(create())
        self.wait_until(lambda: self.namesrv.routes.route(topic) is not None, timeout_s, f"{topic}'s route")

    def create_topic_on(self, topic: str, broker_addrs: list[str], queues: int = 1,
                        timeout_s: float = 20.0) -> None:
        """Create *topic* with *queues* read and write queues on each broker of *broker_addrs* (masters of
        different names registered with this name server) and wait until its route holds all of them."""
        async def create() -> None:
            async with AdminClient(self.namesrv_addr) as admin:
                for addr in broker_addrs:
                    await admin.create_topic(topic, broker_addr=addr, read_queue_nums=queues,
                                             write_queue_nums=queues)

        def routed_on_all() -> bool:
            route = self.namesrv.routes.route(topic)
            return route is not None and len(route.queue_datas) == len(broker_addrs)

        run(create())
        self.wait_until(routed_on_all, timeout_s, f"{topic}'s route on {len(broker_addrs)} brokers")

    def wait_until(self, fn: Callable[[], T], timeout_s: float, what: str) -> T:
        """Poll *fn* on the loop until it returns something truthy; AssertionError after *timeout_s*."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.call(fn)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {value!r})")
            time.sleep(0.05)

    def wait_dispatched(self, timeout_s: float = 10.0) -> None:
        """Block until the broker's dispatcher has put everything written so far into the consume queues and
        the index (MessageStore.wait_dispatched, from this thread): what to do before asserting that something
        is NOT in a queue, since a record written a moment ago may not be dispatched yet."""
        if not self.broker.store.wait_dispatched(timeout_s):  # thread-safe; the loop stays free meanwhile
            raise AssertionError(f"timed out after {timeout_s} s waiting for the dispatcher to catch up")

    def wait_slave_synced(self, slave: Broker, timeout_s: float = 30.0) -> None:
        """Block until *slave* (a slave of this cluster's broker, started on its loop) holds and has
        dispatched everything the master has written so far and knows its master; then sync its topics
        once."""
        end = self.call(lambda: self.broker.store.max_commit_log_offset)
        self.wait_until(lambda: slave.store.max_commit_log_offset == end
                        and not slave.store.dispatch_behind_bytes, timeout_s, "the slave to catch up")
        self.wait_until(lambda: slave.slave_sync is not None and slave.slave_sync.master_addr(), timeout_s,
                        "the slave to know its master")
        assert slave.slave_sync is not None and self.run(slave.slave_sync.sync_once())  # the topic, now

    def close(self) -> None:
        if not self.thread.is_alive():
            return
        try:
            self.run(self._close(), 30.0)
        finally:
            self._stop_loop()

    async def _close(self) -> None:
        await self.broker.close()
        await self.namesrv.close()  # (a test may have put a restarted one there)
        for namesrv in self.namesrvs[1:]:
            await namesrv.close()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()


def producer_ids_on_loop(cluster: LocalCluster, group: str) -> list[str]:
    """The client ids of *group*'s producer table (on the cluster's loop: inside wait_until or call)."""
    return sorted(c.client_id for c in cluster.broker.clients.producer_channels(group))


@asynccontextmanager
async def registrations_held(cluster: LocalCluster) -> AsyncIterator[asyncio.Lock]:
    """Hold the name server's registration lock (on the cluster's loop), as a big registration being applied
    holds it: the registrations and unregistrations that reach the name server meanwhile wait behind it
    (:func:`lock_waiters` of the lock given counts them) and are applied, in order, after the block."""
    lock = cluster.namesrv.handlers._registering
    await lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def lock_waiters(lock: asyncio.Lock) -> int:
    """How many tasks wait for *lock* (in :func:`registrations_held`: the requests queued behind it)."""
    return len(lock._waiters or ())


def routed_in(cluster: LocalCluster, broker_name: str, *topics: str) -> bool:
    """Whether the name server's route of any of *topics* lists the broker *broker_name* (on the cluster's
    loop: inside wait_until, call or run)."""
    for topic in topics:
        route = cluster.namesrv.routes.route(topic)
        if route is not None and any(bd.broker_name == broker_name for bd in route.broker_datas):
            return True
    return False


async def stored_request_reply_properties(cluster: LocalCluster, topic: str,
                                          timeout_s: float = 30.0) -> dict[str, str]:
    """The properties of a reply (4.9.3's MessageUtil.createReplyMessage: MSG_TYPE=reply and the request's
    CORRELATION_ID, REPLY_TO_CLIENT and TTL) to the first request on *topic* (one queue), once the broker has
    stored it; from a loop other than the cluster's (run_within)."""
    found = await eventually(lambda: stored_messages(cluster, topic, 1), timeout_s, f"the request on {topic}")
    asked = found[0].properties
    return {"MSG_TYPE": "reply", "CORRELATION_ID": asked["CORRELATION_ID"],
            "REPLY_TO_CLIENT": asked["REPLY_TO_CLIENT"], "TTL": asked["TTL"]}


async def send_msg_back(broker_addr: str, sent: SendResult, group: str, topic: str,
                        delay_levels: list[str]) -> None:
    """CONSUMER_SEND_MSG_BACK of the message *sent* to *topic* for *group*, once per delay level of
    *delay_levels* ("0": a retry later, "-1": a dead letter), each raw from a pool of its own and answered
    SUCCESS."""
    _, offset = decode_offset_message_id(sent.offset_msg_id)
    pool = ConnectionPool()
    try:
        for level in delay_levels:
            ext = {"offset": str(offset), "group": group, "delayLevel": level, "originMsgId": sent.msg_id,
                   "originTopic": topic}
            answer = await pool.request(broker_addr, RemotingCommand.request(
                RequestCode.CONSUMER_SEND_MSG_BACK, ext), 5)
            assert answer.code == 0, answer.remark
    finally:
        await pool.close()


def send_bodies(cluster: LocalCluster, topic: str, bodies: list[str], group: str = "bodies-producer") -> None:
    """Send each of *bodies* (UTF-8) to *topic* from a producer of *group*, from the calling thread, and wait
    until the broker has dispatched them."""

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, group) as producer:
            for body in bodies:
                await producer.send(topic, body.encode())

    asyncio.run(go())
    cluster.wait_dispatched()


def recreate_topic(cluster: LocalCluster, topic: str, queues: int = 1) -> None:
    """Delete *topic* (from the broker and the name server, by an AdminClient) and create it again."""

    async def delete() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.delete_topic(topic)

    asyncio.run(delete())
    cluster.create_topic(topic, queues)


def pull_all(namesrv_addr: str, topic: str, group: str = "inspector-group", *,
             expected: int | None = None) -> list[StoredMessage]:
    """Every message of *topic* as a consumer (rocketstore's PullConsumer, from this thread's own loop)
    gets it: each queue pulled from offset 0 to its end.  With *expected*, pulled again (for up to 10 s)
    until at least that many are found: a send is answered once its record is in the commitlog, and the
    consume queues a pull reads are built from it a moment later (as in RocketMQ), so a pull right after
    a send may not see it yet."""
    async def once() -> list[StoredMessage]:
        async with PullConsumer(namesrv_addr, group) as consumer:
            found: list[StoredMessage] = []
            for mq in await consumer.queues(topic):
                offset = 0
                while True:
                    result = await consumer.pull(mq, offset)
                    found.extend(result.messages)
                    if not result.messages:
                        break
                    offset = result.next_begin_offset
            return found

    async def go() -> list[StoredMessage]:
        deadline = time.monotonic() + 10.0
        while True:
            found = await once()
            if expected is None or len(found) >= expected or time.monotonic() > deadline:
                return found
            await asyncio.sleep(0.05)

    return run(go())


def stored_messages(cluster: LocalCluster, topic: str, queues: int = 8) -> list[StoredMessage]:
    """Every message of *topic* as its first *queues* consume queues index them, read on the cluster's
    loop (the store answers at most 32 a read)."""
    def read() -> list[StoredMessage]:
        found: list[StoredMessage] = []
        for q in range(queues):
            offset = 0
            while batch := cluster.broker.store.get(topic, q, offset, 32).messages:
                found.extend(batch)
                offset = batch[-1].queue_offset + 1
        return found

    return cluster.call(read)


def wait_stored(cluster: LocalCluster, topic: str, count: int, what: str, *, timeout_s: float = 15.0,
                queues: int = 8) -> list[StoredMessage]:
    """Poll until *topic* holds exactly *count* messages (the consume queues are built asynchronously);
    AssertionError on more, or after *timeout_s*."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = stored_messages(cluster, topic, queues)
        if len(found) >= count:
            assert len(found) == count, f"{len(found)} messages in {topic}, expected {count} ({what})"
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: {len(found)} of {count} "
                                 f"messages in {topic}")
        time.sleep(0.05)


def pull_suggestion(broker_addr: str, group: str, topic: str, queue_id: int, offset: int) -> tuple[int, int]:
    """(response code, suggestWhichBrokerId) of one raw PULL_MESSAGE of one message of *queue_id* from
    *offset* for *group* (no suspension, subscription "*")."""
    from rocketstore.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader
    from rocketstore.remoting.transport import connect

    async def pull() -> tuple[int, int]:
        conn = await connect(broker_addr)
        try:
            header = PullMessageRequestHeader(
                consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=offset, max_msg_nums=1,
                sys_flag=0x4, commit_offset=0, suspend_timeout_ms=0, subscription="*", sub_version=0,
                expression_type="TAG")
            request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
            answer = await conn.request(request, 5)
            suggest = PullMessageResponseHeader.from_ext_fields(answer.ext_fields).suggest_which_broker_id
            return answer.code, suggest
        finally:
            conn.close()

    return run(pull())
