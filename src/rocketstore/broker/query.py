"""QUERY_MESSAGE (12, by key through the index) and VIEW_MESSAGE_BY_ID (33, by commitlog offset).

Both answer with whole commitlog records in the body, as a Java broker does: the stored bytes of each
message the store found (MessageStore.record_bytes), so a topic or properties that are not UTF-8 reach the
client as stored.  A record damaged on disk does not get here: the store raises MessageDecodeError for it
(its body checked against its CRC), answered as SYSTEM_ERROR naming the record (4.9.3 sends it unchecked).
A record whose segment retention deleted between the look-up and the read is left out (view: not found).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketstore.errors import MessageDecodeError
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["damaged_remark", "register"]


def damaged_remark(exc: MessageDecodeError) -> str:
    """The remark of a SYSTEM_ERROR answered for a record the store found damaged."""
    return f"the stored message is damaged: {exc}"


def register(router: RequestRouter, broker: Broker) -> None:
    async def query_message(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = QueryMessageRequestHeader.from_ext_fields(request.ext_fields)
        max_num = broker.store.config.default_query_max_num if h.unique_key_query else h.max_num
        try:
            result = await broker.run_blocking(broker.store.query, h.topic, h.key, max_num,
                                               h.begin_timestamp_ms, h.end_timestamp_ms)
        except MessageDecodeError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=damaged_remark(exc))
        # the header goes with a not-found answer too (0 and 0 when no index entry matched), as in 4.9.3
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp_ms=result.index_last_update_timestamp,
            index_last_update_commit_log_offset=result.index_last_update_phy_offset).to_ext_fields()
        records = [r for r in map(broker.store.record_bytes, result.messages) if r is not None]
        if not records:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, ext_fields=ext,
                                         remark="can not find message, maybe time range not correct")
        return request.make_response(ResponseCode.SUCCESS, ext_fields=ext, body=b"".join(records))

    async def view_message(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = ViewMessageRequestHeader.from_ext_fields(request.ext_fields)
        try:
            message = broker.store.message_at(h.commit_log_offset)
        except MessageDecodeError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=damaged_remark(exc))
        record = None if message is None else broker.store.record_bytes(message)
        if record is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"can not find message by the offset, {h.commit_log_offset}")
        return request.make_response(ResponseCode.SUCCESS, body=record)

    router.add(RequestCode.QUERY_MESSAGE, query_message)
    router.add(RequestCode.VIEW_MESSAGE_BY_ID, view_message)
