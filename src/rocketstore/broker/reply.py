"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325): the answer to a request message, passed on to
the producer waiting for it (RocketMQ 4.9.3's ReplyMessageProcessor; request/reply since 4.6).

A requester sends an ordinary message carrying CORRELATION_ID, REPLY_TO_CLIENT (its client id) and TTL;
the broker adds CLUSTER as to every message.  The consumer that handles it sends the reply to
``<CLUSTER>_REPLY_TOPIC`` with MSG_TYPE=reply and those three properties copied, which a client sends with
these codes (the send header, v1 or v2 names).  Then, as 4.9.3 does:

1. the send checks of a plain send: topic name, SCHEDULE_TOPIC_XXXX refused, a missing topic created from
   the default topic, the queue id checked (a negative one picked at random);
2. the reply is pushed with PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the connection producer REPLY_TO_CLIENT
   heartbeats on (any group), waiting for its answer like any broker-to-client call; the pushed properties
   are the reply's plus PUSH_REPLY_TIME;
3. with storeReplyMessageEnable (the default) the reply is also stored, its properties string as sent, byte
   for byte (neither CLUSTER added nor WAIT dropped, nor the map serialised again, unlike a plain send), as
   a plain message whatever the header's sysFlag: 4.9.3 never copies that flag into the record, so a reply
   flagged as a transaction's half or rollback is stored visible like any other, and its DELAY honoured.

The answer is SUCCESS when the push succeeded, else SYSTEM_ERROR naming why (no REPLY_TO_CLIENT, the client
not connected, its failure); either way it carries the stored record's msgId, queueId and queueOffset when
the store took it (else, if pushed, msgId "0", the queue id and queueOffset 0; neither: none of the three),
and MSG_REGION / TRACE_ON.

Two deliberate differences: a body over maxMessageSize is refused with MESSAGE_ILLEGAL before anything is
pushed (4.9.3 pushes it, then the store refuses it and the requester has a reply nobody stored); and a reply
flagged compressed keeps that bit in the record (4.9.3 stores sysFlag 0, so a consumer of the reply topic
got the deflated bytes of every Java reply of 4 KiB or more as its body).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rocketstore.broker.consumer_calls import CALL_CLIENT_TIMEOUT_S
from rocketstore.broker.send import PUT_STATUS_REMARKS, check_topic_and_queue, peer_host
from rocketstore.errors import RemotingError
from rocketstore.message.host import HostAddress
from rocketstore.message.java_numbers import java_int_problem
from rocketstore.message.properties import PropertyName, SentProperties, encode_properties, parse_properties
from rocketstore.message.record import Message, SysFlag
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import ReplyMessageRequestHeader
from rocketstore.remoting.send_headers import SendHeaderFields, send_message_header_fields
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.store.results import PutMessageStatus

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["PUSH_REPLY_TIME", "REPLY_TO_CLIENT", "java_socket_text", "register"]

REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
PUSH_REPLY_TIME = "PUSH_REPLY_TIME"

#: what 4.9.3 counts as stored (the reply answer keeps the record's id for these)
_STORED = frozenset({PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                     PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE})


def java_socket_text(host: HostAddress | None, fallback: tuple[str, int] | None = None) -> str:
    """An address as Java's ``InetSocketAddress.toString()`` writes a resolved one: ``/ip:port``."""
    if host is not None:
        return f"/{host.ip_text()}:{host.port}"
    if fallback is not None:
        return f"/{fallback[0]}:{fallback[1]}"
    return "/0.0.0.0:0"


def register(router: RequestRouter, broker: Broker) -> None:
    async def send_reply(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        fields = send_message_header_fields(request.code, request.ext_fields)
        (_group, topic, default_topic, default_topic_queue_nums, asked_queue_id, sys_flag, born_timestamp, flag,
         properties, reconsume_times, unit_mode, _batch, _max_reconsume) = fields
        config = broker.config
        region = {"MSG_REGION": config.region_id, "TRACE_ON": "true" if config.trace_on else "false"}
        tc, queue_id, remark = check_topic_and_queue(broker, conn, topic, default_topic, default_topic_queue_nums,
                                                     asked_queue_id, unit_mode)
        if tc is None:
            return request.make_response(queue_id, remark=remark, ext_fields=region)
        body = request.body or b""
        if len(body) > broker.store.config.max_message_size:
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL,
                                         remark=PUT_STATUS_REMARKS[PutMessageStatus.MESSAGE_ILLEGAL], ext_fields=region)
        # stored as the text it came as (4.9.3 writes the request's properties string, not the map again)
        props = SentProperties(parse_properties(properties), properties) if properties else {}
        born = peer_host(conn)
        # stored as a plain message: 4.9.3's record has sysFlag 0 (only the compressed bit is kept, see above)
        message = Message(topic, body, props, queue_id, flag, sys_flag & SysFlag.COMPRESSED, born_timestamp,
                          born, broker.store_host, reconsume_times or 0)

        pushed, why = await _push(broker, conn, fields, props, message)
        # as handlePushReplyResult / handlePutMessageResult: the header's msgId, queueId and queueOffset are
        # "0", the queue, 0 once pushed, the stored record's once stored, and left out when neither
        ext = ({"msgId": "0", "queueId": str(queue_id), "queueOffset": "0", **region} if pushed
               else dict(region))
        if config.store_reply_message_enable:
            # 4.9.3's putMessage reads DELAY with Integer.parseInt (the record is never a half or rollback)
            # and lets it throw: the push is done, yet the answer is that exception's SYSTEM_ERROR, none stored
            problem = java_int_problem(props.get(PropertyName.DELAY))
            if problem is not None:
                return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
            result = await broker.put(message, sent=True)  # counted as a send (TOPIC_PUT_NUMS), as 4.9.3 does
            if result.status in _STORED:
                ext["msgId"] = result.msg_id
                ext["queueId"] = str(queue_id)
                ext["queueOffset"] = str(result.queue_offset)
        if pushed:
            return request.make_response(ResponseCode.SUCCESS, ext_fields=ext)
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=why, ext_fields=ext)

    router.add(RequestCode.SEND_REPLY_MESSAGE, send_reply)
    router.add(RequestCode.SEND_REPLY_MESSAGE_V2, send_reply)


async def _push(broker: Broker, conn: Connection, fields: SendHeaderFields, props: dict[str, str],
                message: Message) -> tuple[bool, str]:
    """PUSH_REPLY_MESSAGE_TO_CLIENT to the requester (the reply's send header *fields* as they came); (pushed,
    why not)."""
    sender_id = props.get(REPLY_TO_CLIENT)
    if sender_id is None:
        return False, f"reply message properties[{REPLY_TO_CLIENT}] is null"
    channel = broker.clients.producer_channel(sender_id)
    target = None if channel is None else channel.connection
    if not isinstance(target, Connection) or target.is_closed:
        return False, f"push reply message fail, channel of <{sender_id}> not found."
    (group, topic, default_topic, default_topic_queue_nums, queue_id, sys_flag, born_timestamp, flag, _props,
     reconsume_times, unit_mode, _batch, _max_reconsume) = fields
    pushed_props = dict(props)
    pushed_props[PUSH_REPLY_TIME] = str(int(time.time() * 1000))
    header = ReplyMessageRequestHeader(
        producer_group=group, topic=topic, default_topic=default_topic,
        default_topic_queue_nums=default_topic_queue_nums, queue_id=queue_id, sys_flag=sys_flag,
        born_timestamp=born_timestamp, flag=flag, properties=encode_properties(pushed_props),
        reconsume_times=reconsume_times, unit_mode=unit_mode,
        born_host=java_socket_text(message.born_host, conn.peer),
        store_host=java_socket_text(broker.store_host), store_timestamp=int(time.time() * 1000))
    push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), message.body)
    try:
        answer = await target.request(push, CALL_CLIENT_TIMEOUT_S)
    except RemotingError:
        return False, f"push reply message to {sender_id}fail."
    if answer.code != ResponseCode.SUCCESS:
        return False, f"push reply message to {sender_id}fail."
    return True, ""
