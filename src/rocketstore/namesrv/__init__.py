"""The name server: a pure route table, its request handlers, and a server around them.

Imports remoting and message only (never store, broker or client).
"""

from rocketstore.namesrv.config import NamesrvConfig, NamesrvConfigError
from rocketstore.namesrv.handlers import KVTable, NameServerHandlers
from rocketstore.namesrv.route_table import BROKER_EXPIRY_MS, RegisterResult, RouteTable
from rocketstore.namesrv.server import NameServer

__all__ = ["BROKER_EXPIRY_MS", "KVTable", "NameServer", "NameServerHandlers", "NamesrvConfig", "NamesrvConfigError", "RegisterResult", "RouteTable"]
