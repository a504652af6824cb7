"""Message value types and the only commitlog record codec (no I/O).

Nothing here imports the store, remoting or anything with sockets or threads.
"""

from rocketstore.message.batch import BatchEntry, decode_batch, encode_batch
from rocketstore.message.hashing import index_key_hash, java_string_hash, tags_code
from rocketstore.message.host import HostAddress, parse_host
from rocketstore.message.message_id import decode_offset_message_id, encode_offset_message_id
from rocketstore.message.properties import PropertyName, encode_properties, parse_properties
from rocketstore.message.record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    DispatchInfo,
    Message,
    StoredMessage,
    SysFlag,
    decode_record,
    encode_record,
)

__all__ = [
    "BLANK_MAGIC",
    "MESSAGE_MAGIC",
    "BatchEntry",
    "DispatchInfo",
    "HostAddress",
    "Message",
    "PropertyName",
    "StoredMessage",
    "SysFlag",
    "decode_batch",
    "decode_offset_message_id",
    "decode_record",
    "encode_batch",
    "encode_offset_message_id",
    "encode_properties",
    "encode_record",
    "index_key_hash",
    "java_string_hash",
    "parse_host",
    "parse_properties",
    "tags_code",
]
