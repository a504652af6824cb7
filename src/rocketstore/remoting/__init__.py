"""The RocketMQ remoting protocol: codes, commands, frame codec and typed headers.

Everything re-exported here is pure (bytes in, bytes out); the socket side is remoting.transport and
remoting.server.
"""

from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.codes import (
    MQ_VERSION,
    PUT_STATUS_RESPONSE_CODES,
    LanguageCode,
    MQVersion,
    RequestCode,
    ResponseCode,
    SerializeType,
    response_code_for_put_status,
)
from rocketstore.remoting.command import ONEWAY_FLAG, RESPONSE_FLAG, RemotingCommand
from rocketstore.remoting.frame_decoder import MAX_FRAME_BYTES, FrameDecoder, decode_command
from rocketstore.remoting.header_fields import CommandHeader, HeaderFieldError
from rocketstore.remoting.headers import REQUEST_HEADER_TYPES, RESPONSE_HEADER_TYPES, parse_request_header
from rocketstore.remoting.send_headers import parse_send_message_header

__all__ = [
    "MAX_FRAME_BYTES",
    "MQ_VERSION",
    "ONEWAY_FLAG",
    "PUT_STATUS_RESPONSE_CODES",
    "REQUEST_HEADER_TYPES",
    "RESPONSE_FLAG",
    "RESPONSE_HEADER_TYPES",
    "CommandHeader",
    "FrameDecoder",
    "HeaderFieldError",
    "LanguageCode",
    "MQVersion",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "decode_command",
    "encode_command",
    "parse_request_header",
    "parse_send_message_header",
    "response_code_for_put_status",
]
