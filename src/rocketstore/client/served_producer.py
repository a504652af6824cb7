"""A producer the brokers can call back: the base of the transactional producer (CHECK_TRANSACTION_STATE)
and the requesting producer (PUSH_REPLY_MESSAGE_TO_CLIENT).

A broker reaches a producer only on a connection the producer heartbeats on (every Producer heartbeats:
HEART_BEAT with the group and CLIENT_INNER_PRODUCER in ``producerDataSet``, see
:class:`rocketstore.client.producer.Producer`).  This one's connections answer the broker's requests with a
*handler*, and its senders call ``discover(topic)`` before a send that needs the broker to know the
producer: it heartbeats the masters of the topic's route not heartbeated yet, and again a master whose
heartbeated connection has closed (a broker restart, a dropped socket), so that the replies to requests and
the checks of transactions sent after a broker restart do not wait for the next periodic heartbeat (up to
30 s; 4.9.3's Java client has that gap).

Loop-bound.  Imports remoting and message only (never store, broker or namesrv).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError
from rocketstore.client.latency_fault import DEFAULT_LATENCY_MAX, DEFAULT_NOT_AVAILABLE_DURATION
from rocketstore.client.producer import Producer
from rocketstore.client.route import AUTO_CREATE_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS, RouteCache
from rocketstore.remoting.tls import ClientTls, client_ssl_context
from rocketstore.remoting.transport import ConnectionPool, RequestHandler

__all__ = ["ServedProducer"]


class ServedProducer(Producer):
    #: replies and transaction checks reach this producer only on a heartbeated connection
    heartbeat_failure_level = logging.WARNING

    def __init__(self, namesrv_addr: str | None, group: str, handler: RequestHandler, *, timeout_s: float = 3.0,
                 retry_times: int = 2, heartbeat_interval_s: float = 30.0, instance_name: str | None = None,
                 credentials: SessionCredentials | None = None, enable_trace: bool = False,
                 trace_topic: str | None = None, tls: ClientTls = None,
                 mq_client_api_timeout_s: float = 3.0, route_refresh_interval_s: float = 30.0,
                 client_ip: str | None = None, namespace: str | None = None,
                 send_latency_fault_enable: bool = False,
                 latency_max: Sequence[int] = DEFAULT_LATENCY_MAX,
                 not_available_duration: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION,
                 retry_another_broker_when_not_store_ok: bool = False, unit_name: str | None = None,
                 create_topic_key: str = AUTO_CREATE_TOPIC,
                 default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
                 namesrv_domain: str | None = None, namesrv_domain_subgroup: str | None = None) -> None:
        """*handler* answers the requests brokers send on this producer's connections; the client id is
        ``ip@instance_name`` (default ``pid#nanos``, unique per producer; ``@unit_name`` after it with one);
        *enable_trace* / *trace_topic* / *tls* / *mq_client_api_timeout_s* / *route_refresh_interval_s* /
        *client_ip* / *namespace* / *send_latency_fault_enable* / *latency_max* / *not_available_duration* /
        *retry_another_broker_when_not_store_ok* / *unit_name* / *create_topic_key* /
        *default_topic_queue_nums* / *namesrv_domain* / *namesrv_domain_subgroup* as the Producer's."""
        super().__init__(namesrv_addr, group, timeout_s=timeout_s, retry_times=retry_times, credentials=credentials,
                         enable_trace=enable_trace, trace_topic=trace_topic,
                         heartbeat_interval_s=heartbeat_interval_s, instance_name=instance_name, tls=tls,
                         mq_client_api_timeout_s=mq_client_api_timeout_s,
                         route_refresh_interval_s=route_refresh_interval_s, client_ip=client_ip,
                         namespace=namespace, send_latency_fault_enable=send_latency_fault_enable,
                         latency_max=latency_max, not_available_duration=not_available_duration,
                         retry_another_broker_when_not_store_ok=retry_another_broker_when_not_store_ok,
                         unit_name=unit_name, create_topic_key=create_topic_key,
                         default_topic_queue_nums=default_topic_queue_nums, namesrv_domain=namesrv_domain,
                         namesrv_domain_subgroup=namesrv_domain_subgroup)
        # the Producer's pool replaced, before it opened any connection, by one whose connections serve
        self.pool = ConnectionPool(handler=handler, connect_timeout_s=timeout_s, credentials=credentials,
                                   ssl_context=client_ssl_context(tls))
        self.routes = RouteCache(self.routes.namesrv_addrs, self.pool, timeout_s=mq_client_api_timeout_s,
                                 on_route=self._route_seen, create_topic_key=create_topic_key,
                                 default_topic_queue_nums=default_topic_queue_nums,
                                 namesrv_domain=namesrv_domain,
                                 namesrv_domain_subgroup=namesrv_domain_subgroup, unit_name=unit_name)

    async def start(self) -> None:
        """Start the heartbeats and heartbeat the masters of the auto-create topic's route
        (``create_topic_key``) before returning: the brokers a new topic's first message goes to know this
        producer when they could call it back."""
        await super().start()
        await self.discover_quietly(self.create_topic_key)

    async def broker_addr(self, topic: str, broker_name: str) -> str:
        """The master of *broker_name* (Java's findBrokerAddressInPublish), the route re-read once if it is
        not known (a retry may have gone to a broker the route seen before the send did not show)."""
        addr = self._brokers.get(broker_name)
        if addr is None:
            await self.discover(topic, refresh=True)
            addr = self._brokers.get(broker_name)
        if addr is None:
            raise ClientError(f"broker {broker_name} has no master address")
        return addr
