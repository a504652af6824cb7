"""A minimal asyncio RocketMQ client on remoting.transport: producer and pull consumer with a route cache.

Imports remoting and message only (never store, broker or namesrv).
"""

from rocketstore.client.consumer import PullConsumer, PullResult, PullStatus, decode_messages
from rocketstore.client.errors import BrokerError, ClientError, NoRouteError, broker_error_for
from rocketstore.client.producer import (
    OutgoingMessage,
    Producer,
    QueueSelector,
    SendResult,
    hash_queue_selector,
    new_uniq_key,
)
from rocketstore.client.route import MessageQueue, RouteCache

__all__ = [
    "BrokerError",
    "ClientError",
    "MessageQueue",
    "NoRouteError",
    "OutgoingMessage",
    "Producer",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "QueueSelector",
    "RouteCache",
    "SendResult",
    "broker_error_for",
    "decode_messages",
    "hash_queue_selector",
    "new_uniq_key",
]
