"""The broker: a MessageStore served over the RocketMQ remoting protocol.

One handler module per request family (send, pull, client_handlers, offset_handlers, query, admin); the
tables (topics, groups, offsets, clients) and long polling are their own small modules.  Imports store,
message and remoting; never namesrv, client, spark or cli.
"""

from rocketstore.broker.broker import Broker
from rocketstore.broker.config import BrokerConfig, load_broker_conf
from rocketstore.broker.offsets import ConsumerOffsetTable

__all__ = ["Broker", "BrokerConfig", "ConsumerOffsetTable", "load_broker_conf"]
