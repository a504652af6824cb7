"""rocketstore: an Apache RocketMQ 4.9 compatible message store and broker in Python."""

from rocketstore.message.record import Message, StoredMessage
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, GetResult, PutMessageStatus, PutResult, QueryResult

__all__ = [
    "GetMessageStatus",
    "GetResult",
    "Message",
    "MessageStore",
    "PutMessageStatus",
    "PutResult",
    "QueryResult",
    "StoreConfig",
    "StoredMessage",
]

__version__ = "0.1.0"
