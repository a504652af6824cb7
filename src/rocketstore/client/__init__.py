"""A minimal asyncio RocketMQ client on remoting.transport: producer, transactional producer, pull consumer,
push consumer and lite pull consumer over a route cache; the producers and the push and lite pull consumers
have blocking wrappers for code without an event loop (BlockingProducer, BlockingTransactionProducer,
BlockingRequestProducer, BlockingPushConsumer, BlockingLitePullConsumer).

Imports remoting and message only (never store, broker or namesrv).
"""

from rocketstore.client.allocate import (
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    allocate_averagely,
    allocate_averagely_by_circle,
)
from rocketstore.client.blocking_producer import (
    BlockingProducer,
    BlockingRequestProducer,
    BlockingTransactionProducer,
)
from rocketstore.client.blocking_push import BlockingLitePullConsumer, BlockingPushConsumer
from rocketstore.client.consumer import (
    MessageSelector,
    PullConsumer,
    PullResult,
    PullStatus,
    UndecodableMessage,
    decode_messages,
)
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import (
    BrokerError,
    ClientError,
    NoRouteError,
    QueueNotInRouteError,
    SendCallTimeoutError,
    SendFailedError,
    ServiceState,
    broker_error_for,
)
from rocketstore.client.group_consumer import ConsumerSettingsError
from rocketstore.client.lite_pull_consumer import (
    ConsumerNotRunningError,
    LitePullConsumer,
    LitePullConsumerSettings,
    SubscriptionConflictError,
)
from rocketstore.client.offset_store import LocalFileOffsetStore, OffsetStoreError, RemoteOffsetStore
from rocketstore.client.producer import (
    OutgoingMessage,
    Producer,
    QueueSelector,
    SendResult,
    hash_queue_selector,
    new_uniq_key,
)
from rocketstore.client.push_consumer import PushConsumer, PushConsumerSettings
from rocketstore.client.push_types import (
    ConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageHandler,
    MessageModel,
    OrderlyContext,
    current_context,
)
from rocketstore.client.request_producer import (
    ReplyMessage,
    ReplyTimeoutError,
    RequestProducer,
    RequestSendError,
)
from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.client.transaction_producer import (
    LocalTransactionState,
    TransactionMessage,
    TransactionProducer,
    TransactionSendResult,
)

__all__ = [
    "AllocateByConfig",
    "AllocateByMachineRoom",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "BlockingLitePullConsumer",
    "BlockingProducer",
    "BlockingPushConsumer",
    "BlockingRequestProducer",
    "BlockingTransactionProducer",
    "BrokerError",
    "ClientError",
    "ConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "ConsumedMessage",
    "ConsumerNotRunningError",
    "ConsumerSettingsError",
    "LitePullConsumer",
    "LitePullConsumerSettings",
    "LocalFileOffsetStore",
    "LocalTransactionState",
    "MessageHandler",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "NoRouteError",
    "OffsetStoreError",
    "OrderlyContext",
    "OutgoingMessage",
    "Producer",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "PushConsumerSettings",
    "QueueNotInRouteError",
    "QueueSelector",
    "RemoteOffsetStore",
    "ReplyMessage",
    "ReplyTimeoutError",
    "RequestProducer",
    "RequestSendError",
    "RouteCache",
    "SendCallTimeoutError",
    "SendFailedError",
    "SendResult",
    "ServiceState",
    "SessionCredentials",
    "SubscriptionConflictError",
    "TransactionMessage",
    "TransactionProducer",
    "TransactionSendResult",
    "UndecodableMessage",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "broker_error_for",
    "current_context",
    "decode_messages",
    "hash_queue_selector",
    "new_uniq_key",
]
