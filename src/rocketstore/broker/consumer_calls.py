"""Admin requests the broker passes on to one connected consumer: GET_CONSUMER_RUNNING_INFO (307) and
CONSUME_MESSAGE_DIRECTLY (309), as ``mqadmin consumerStatus`` / ``consumeMessage`` use them.

The broker finds the consumer by group and client id among the connections that heartbeat to it, and sends
it a request with the same code, extFields and body, waiting up to ``CALL_CLIENT_TIMEOUT_S`` (RocketMQ's
Broker2Client.callClient); the consumer's answer is the admin's answer.  The failures are RocketMQ's:
SYSTEM_ERROR "The Consumer <group> <client> not online" when no such consumer is connected, SYSTEM_ERROR for
a client older than V3_1_8_SNAPSHOT (it would not understand), CONSUME_MSG_TIMEOUT when the consumer does
not answer in time and SYSTEM_ERROR for any other failure of the call.  For CONSUME_MESSAGE_DIRECTLY the
broker first adds its name (``brokerName``) and the stored record of ``msgId`` (an offset message id) as
the body (SYSTEM_ERROR, as a Java broker fails, when there is no such message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketstore.broker.query import damaged_remark
from rocketstore.errors import InvalidMessageIdError, MessageDecodeError, RemotingError, RequestTimeoutError
from rocketstore.remoting.codes import MQVersion, RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.remoting.versions import get_version_desc

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["CALL_CLIENT_TIMEOUT_S", "register"]

CALL_CLIENT_TIMEOUT_S = 10.0


def register(router: RequestRouter, broker: Broker) -> None:
    async def running_info(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        return await call_consumer(broker, request, h.consumer_group, h.client_id)

    async def consume_directly(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        ext = dict(request.ext_fields)
        ext["brokerName"] = broker.config.broker_name
        try:
            message = broker.store.message_by_id(h.msg_id or "")
        except InvalidMessageIdError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        except MessageDecodeError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=damaged_remark(exc))
        record = None if message is None else broker.store.record_bytes(message)  # the bytes as stored
        if record is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"can not find message by the msgId, {h.msg_id}")
        forwarded = RemotingCommand.request(request.code, ext, record)
        return await call_consumer(broker, forwarded, h.consumer_group, h.client_id or "", answer_to=request)

    router.add(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
    router.add(RequestCode.CONSUME_MESSAGE_DIRECTLY, consume_directly)


async def call_consumer(broker: Broker, request: RemotingCommand, group: str, client_id: str, *,
                        answer_to: RemotingCommand | None = None) -> RemotingCommand:
    """Send *request*'s code, extFields and body to consumer *client_id* of *group*; its answer, or the
    broker's error, as the response to *answer_to* (default: *request*)."""
    answer_to = answer_to or request
    info = broker.clients.group(group)
    channel = None
    if info is not None:
        channel = next((c for c in info.channels.values() if c.client_id == client_id), None)
    if channel is None or not isinstance(channel.connection, Connection) or channel.connection.is_closed:
        return answer_to.make_response(ResponseCode.SYSTEM_ERROR,
                                       remark=f"The Consumer <{group}> <{client_id}> not online")
    if channel.version < MQVersion.V3_1_8_SNAPSHOT:
        return answer_to.make_response(ResponseCode.SYSTEM_ERROR, remark=(
            f"The Consumer <{client_id}> Version <{get_version_desc(channel.version)}> too low to finish, "
            "please upgrade it to V3_1_8_SNAPSHOT"))
    forwarded = RemotingCommand.request(request.code, dict(request.ext_fields), request.body)
    try:
        response = await channel.connection.request(forwarded, CALL_CLIENT_TIMEOUT_S)
    except RequestTimeoutError as exc:
        return answer_to.make_response(ResponseCode.CONSUME_MSG_TIMEOUT,
                                       remark=f"consumer <{group}> <{client_id}> Timeout: {exc}")
    except RemotingError as exc:
        return answer_to.make_response(ResponseCode.SYSTEM_ERROR,
                                       remark=f"invoke consumer <{group}> <{client_id}> Exception: {exc}")
    return answer_to.make_response(response.code, remark=response.remark, body=response.body,
                                   ext_fields=dict(response.ext_fields))
