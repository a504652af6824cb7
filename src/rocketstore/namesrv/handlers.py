"""Name server request handlers (RocketMQ's DefaultRequestProcessor) over a RouteTable and a KV table.

One async function per request code, each taking (connection, request) and returning the response.
Imports remoting only (never store, broker or client).  Runs on the name server's event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import zlib
from collections.abc import Callable
from typing import TypeVar

from rocketstore.errors import RocketStoreError
from rocketstore.files import write_text_atomically
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.namesrv.config import NamesrvConfig, NamesrvConfigError
from rocketstore.namesrv.route_table import RouteTable
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, topic_list_body
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection

__all__ = ["ORDER_TOPIC_CONFIG", "KVTable", "NameServerHandlers"]

log = logging.getLogger(__name__)

#: a RegisterBrokerBody decoder's result (the slim decoder may give None)
_Body = TypeVar("_Body", RegisterBrokerBody, RegisterBrokerBody | None)

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
_FAQ_APPLY_TOPIC = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#: a registration body this big is decoded off the loop (10,000 topics: 1.4 MB, ~100 ms to decode)
_DECODE_OFF_LOOP_BYTES = 64 * 1024
#: the same for a compressed one (zlib takes 10,000 topics to ~25 KB, ~120 ms to decode on the loop)
_DECODE_OFF_LOOP_COMPRESSED_BYTES = 2 * 1024


class KVTable:
    """namespace -> key -> value (KVConfigManager).  With a *path* the table is read from it (a JSON file
    ``{"configTable": {...}}``, 4.9.3's KVConfigSerializeWrapper) and rewritten after every change; without
    one it lives in memory only."""

    def __init__(self, path: str | None = None) -> None:
        self.table: dict[str, dict[str, str]] = {}
        self.path = path
        if path is not None:
            self.table = _load_kv_file(path)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        self._persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        ns = self.table.get(namespace)
        if ns is not None and key in ns:
            # the namespace stays, empty, as in 4.9.3's KVConfigManager: GET_KVLIST_BY_NAMESPACE and the
            # REGISTER_BROKER answer then carry {"table":{}}, which is how brokers learn that no topic is
            # ordered any more (updateOrderTopicConfig clears the flags only when it gets a table)
            del ns[key]
            self._persist()

    def namespace_body(self, namespace: str) -> bytes | None:
        ns = self.table.get(namespace)
        return fastjson.dumps({"table": ns}) if ns is not None else None

    def _persist(self) -> None:
        if self.path is not None:
            write_text_atomically(self.path, fastjson.dumps({"configTable": self.table}).decode("utf-8"))


def _load_kv_file(path: str) -> dict[str, dict[str, str]]:
    """The table of a kvConfig.json, else of the ``.bak`` copy its writer keeps; empty when neither exists.
    An empty file counts as missing, as the broker's config files do (the ``.bak`` is read: a good ``.bak``
    was otherwise lost at the next PUT_KV_CONFIG, which makes the empty file the ``.bak``).  A file that
    exists but does not read (a configTable or namespace that is no object included) is a NamesrvConfigError
    (the name server would otherwise start with an empty table and overwrite it)."""
    problems = []
    for candidate in (path, path + ".bak"):
        try:
            with open(candidate, "rb") as fh:
                data = fh.read().removeprefix(b"\xef\xbb\xbf")  # (an editor's BOM, which fastjson skips)
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        try:
            # (decoded here: bytes that are not UTF-8 make the file unreadable, its .bak read)
            loaded = fastjson.loads(data.decode("utf-8")).get("configTable")
            if loaded is None:
                return {}
            if not isinstance(loaded, dict) or not all(isinstance(kv, dict) for kv in loaded.values()):
                raise ValueError("configTable is no object of objects")
            return {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in loaded.items()}
        except (RocketStoreError, ValueError, AttributeError) as exc:
            problems.append(f"{candidate}: {exc}")
    if problems:
        raise NamesrvConfigError("cannot read the KV table: " + "; ".join(problems))
    return {}


def _now_ms() -> int:
    """The clock of broker liveness: monotonic ms, not 4.9.3's currentTimeMillis (a wall clock stepped
    forward, by NTP or a resumed VM, would expire every broker at the next scan and drop their routes; one
    stepped back would keep a dead broker's routes for as long).  Liveness times are never shown."""
    return time.monotonic_ns() // 1_000_000


class NameServerHandlers:
    """Builds the request router of a name server."""

    def __init__(self, routes: RouteTable, kv: KVTable | None = None, *, config: NamesrvConfig | None = None,
                 persist_config: bool = False, clock_ms: Callable[[], int] = _now_ms) -> None:
        """*persist_config*: UPDATE_NAMESRV_CONFIG writes every setting to the config's configStorePath (a
        name server without files, as in tests, keeps them in memory)."""
        self.routes = routes
        self.kv = kv or KVTable()
        self.config = config or NamesrvConfig()
        self.persist_config = persist_config
        self.clock_ms = clock_ms
        #: registrations are decoded and applied one at a time, in arrival order, even when a big body is
        #: decoded off the loop (a broker's newer registration must not be applied before its older one)
        self._registering = asyncio.Lock()
        #: (RouteTable.topic_set_changes, GET_ALL_TOPIC_LIST_FROM_NAMESERVER's body) of the last answer: a
        #: Spark stream subscribed by pattern asks at every trigger, and the topic set rarely moves
        self._topic_list: tuple[int, bytes] | None = None

    def router(self) -> RequestRouter:
        # a code not served here goes unanswered, as 4.9.3's DefaultRequestProcessor returns null for it
        r = RequestRouter(answer_unknown_codes=False)
        r.add(RequestCode.REGISTER_BROKER, self.register_broker)
        r.add(RequestCode.UNREGISTER_BROKER, self.unregister_broker)
        r.add(RequestCode.GET_ROUTEINFO_BY_TOPIC, self.get_route)
        r.add(RequestCode.GET_BROKER_CLUSTER_INFO, self.cluster_info)
        r.add(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, self.topic_list)
        r.add(RequestCode.GET_TOPICS_BY_CLUSTER, self.topics_by_cluster)
        r.add(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, self.system_topics)
        r.add(RequestCode.GET_UNIT_TOPIC_LIST, self.unit_topics)
        r.add(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, self.unit_sub_topics)
        r.add(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, self.unit_sub_ununit_topics)
        r.add(RequestCode.QUERY_DATA_VERSION, self.query_data_version)
        r.add(RequestCode.PUT_KV_CONFIG, self.put_kv)
        r.add(RequestCode.GET_KV_CONFIG, self.get_kv)
        r.add(RequestCode.DELETE_KV_CONFIG, self.delete_kv)
        r.add(RequestCode.GET_KVLIST_BY_NAMESPACE, self.kv_list)
        r.add(RequestCode.WIPE_WRITE_PERM_OF_BROKER, self.wipe_write_perm)
        r.add(RequestCode.ADD_WRITE_PERM_OF_BROKER, self.add_write_perm)
        r.add(RequestCode.DELETE_TOPIC_IN_NAMESRV, self.delete_topic)
        r.add(RequestCode.GET_NAMESRV_CONFIG, self.get_config)
        r.add(RequestCode.UPDATE_NAMESRV_CONFIG, self.update_config)
        return r

    # --- its own settings ---------------------------------------------------------------------------

    async def get_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=self.config.to_properties().encode("utf-8"))

    async def update_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """4.9.3's updateConfig, stricter: an unknown setting, a value that does not convert, or a path or
        the port (FIXED_AT_RUN_TIME) is refused with SYSTEM_ERROR and nothing changes (4.9.3 skips unknown
        names silently and lets a client move the files)."""
        try:
            props = parse_properties_text((request.body or b"").decode("utf-8"))
            updated = self.config.updated(props)
        except (UnicodeDecodeError, NamesrvConfigError) as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"updateConfig refused: {exc}")
        if self.persist_config:
            try:
                write_text_atomically(updated.config_store_path, updated.to_properties())
            except OSError as exc:
                return request.make_response(ResponseCode.SYSTEM_ERROR,
                                             remark=f"cannot write {updated.config_store_path}: {exc}")
        self.config = updated
        log.info("name server settings updated by %s: %s", conn.peer_address, props)
        return request.make_response(ResponseCode.SUCCESS)

    # --- brokers ------------------------------------------------------------------------------------

    async def register_broker(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        if header.body_crc32 != 0 and (zlib.crc32(request.body) & 0x7FFFFFFF) != header.body_crc32:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark="crc32 not match")
        async with self._registering:
            if not request.body:
                body = RegisterBrokerBody({}, DataVersion())
            else:
                # the topics only when the table takes them (a master registering first or with a new data
                # version): a broker's every-30-s registration of an unchanged table costs no topic parsing.
                # The check and the registration of the slim body run with no await between them.
                slim = await self._decode_body(RegisterBrokerBody.decode_without_topics, request, header.compressed)
                if slim is not None and not self.routes.takes_topic_configs(
                        header.broker_name, header.broker_addr, header.broker_id, slim.data_version):
                    body = slim
                else:
                    body = await self._decode_body(RegisterBrokerBody.decode, request, header.compressed)
            result = self.routes.register_broker(header.cluster_name, header.broker_addr, header.broker_name,
                                                 header.broker_id, header.ha_server_addr, body, self.clock_ms(),
                                                 conn)
        ext = RegisterBrokerResponseHeader(ha_server_addr=result.ha_server_addr,
                                           master_addr=result.master_addr).to_ext_fields()
        return request.make_response(ResponseCode.SUCCESS, ext_fields=ext,
                                     body=self.kv.namespace_body(ORDER_TOPIC_CONFIG) or b"")

    async def _decode_body(self, decode: Callable[..., _Body], request: RemotingCommand, compressed: bool) -> _Body:
        """*decode* (a RegisterBrokerBody decoder) of the request's body; off the loop when the body is big,
        so route queries go on being answered meanwhile (the GIL is shared, not held)."""
        call = functools.partial(decode, request.body, compressed=compressed, version=request.version)
        if len(request.body) >= (_DECODE_OFF_LOOP_COMPRESSED_BYTES if compressed else _DECODE_OFF_LOOP_BYTES):
            return await asyncio.get_running_loop().run_in_executor(None, call)
        return call()

    async def unregister_broker(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = UnregisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        # after the registrations that came before it (one may still be decoding its body): applied first, the
        # unregistration would be undone by them and a closed broker routed until it expires
        async with self._registering:
            self.routes.unregister_broker(header.cluster_name, header.broker_addr, header.broker_name,
                                          header.broker_id)
        return request.make_response(ResponseCode.SUCCESS)

    async def query_data_version(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)
        version = DataVersion.from_json(fastjson.loads(request.body)) if request.body else DataVersion()
        changed = self.routes.data_version_changed(header.broker_addr, version)
        if not changed:
            self.routes.touch(header.broker_addr, self.clock_ms())
        live = self.routes.live.get(header.broker_addr)
        body = fastjson.dumps(live.data_version.to_json()) if live is not None else b""
        return request.make_response(ResponseCode.SUCCESS, body=body,
                                     ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext_fields())

    # --- routes ---------------------------------------------------------------------------------------

    async def get_route(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        route = self.routes.route(header.topic)
        if route is None:
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                remark=f"No topic route info in name server for the topic: {header.topic}{_FAQ_APPLY_TOPIC}")
        if self.config.order_message_enable:
            conf = self.kv.get(ORDER_TOPIC_CONFIG, header.topic)
            if conf is not None:
                route = type(route)(route.queue_datas, route.broker_datas, conf, route.filter_server_table)
        return request.make_response(ResponseCode.SUCCESS, body=route.encode())

    async def cluster_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=self.routes.cluster_info_body())

    async def topic_list(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        cached = self._topic_list
        if cached is None or cached[0] != self.routes.topic_set_changes:
            cached = self._topic_list = (self.routes.topic_set_changes, topic_list_body(self.routes.topics()))
        return request.make_response(ResponseCode.SUCCESS, body=cached[1])

    async def topics_by_cluster(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return request.make_response(ResponseCode.SUCCESS,
                                     body=topic_list_body(self.routes.topics_of_cluster(header.cluster)))

    async def system_topics(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        # TopicList with brokerAddr, as 4.9.3 (fastjson: keys sorted, a null brokerAddr left out)
        fields: dict[str, object] = {"topicList": self.routes.system_topics()}
        broker_addr = self.routes.any_broker_addr()
        if broker_addr is not None:
            fields = {"brokerAddr": broker_addr, **fields}
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(fields))

    async def unit_topics(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=topic_list_body(self.routes.unit_topics(unit=True)))

    async def unit_sub_topics(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS,
                                     body=topic_list_body(self.routes.unit_topics(unit_sub=True)))

    async def unit_sub_ununit_topics(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS,
                                     body=topic_list_body(self.routes.unit_topics(unit=False, unit_sub=True)))

    async def wipe_write_perm(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.routes.wipe_write_perm(header.broker_name)
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext_fields())

    async def add_write_perm(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.routes.add_write_perm(header.broker_name)
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext_fields())

    async def delete_topic(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.delete_topic(header.topic)
        return request.make_response(ResponseCode.SUCCESS)

    # --- KV config ------------------------------------------------------------------------------------

    async def put_kv(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv.put(header.namespace, header.key, header.value)
        return request.make_response(ResponseCode.SUCCESS)

    async def get_kv(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         remark=f"No config item, Namespace: {header.namespace} Key: {header.key}")
        return request.make_response(ResponseCode.SUCCESS, ext_fields=GetKVConfigResponseHeader(value=value).to_ext_fields())

    async def delete_kv(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv.delete(header.namespace, header.key)
        return request.make_response(ResponseCode.SUCCESS)

    async def kv_list(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        body = self.kv.namespace_body(header.namespace)
        if body is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         remark=f"No config item, Namespace: {header.namespace}")
        return request.make_response(ResponseCode.SUCCESS, body=body)
