"""INVOKE_BROKER_TO_RESET_OFFSET (222): move a consumer group's offsets of a topic to a point in time, as
``mqadmin resetOffsetByTime`` asks each master (RocketMQ 4.9.3's Broker2Client.resetOffset).

For every write queue of the topic on this broker: the offset of the message stored nearest the timestamp
(the store's offset_by_time, 4.9.3's getOffsetInQueueByTime; -1: the queue's end), taken when it lies
before the group's committed offset or the request says ``isForce``, else the committed offset kept.
A group with no committed offset on a queue is refused (SYSTEM_ERROR "THe consumer group <g> not exist",
RocketMQ's words), as is an unknown topic.  The broker does
not change the offsets itself: it sends RESET_CONSUMER_CLIENT_OFFSET (220, oneway) with the new table to
every connected consumer of the group, which stop those queues, commit the new offsets and go on from
there; none connected is CONSUMER_NOT_ONLINE (the admin then sets the offsets itself).  The answer carries
the table.

The table goes to each consumer in the form it reads: rocketmq-client-cpp's ResetOffsetBodyForC (a list)
to CPP clients, fastjson's Map<MessageQueue, Long> to the others.  (4.9.3 picks one form for all by the
admin's language, which leaves C++ consumers unable to read what a Java mqadmin started.)  The answer is
always the fastjson Map form, whatever the admin's language, as 4.9.3's.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketstore.broker.topics import topic_problem
from rocketstore.remoting.codes import LanguageCode, MQVersion, RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.consumer_bodies import QueueKey, encode_reset_offset_body
from rocketstore.remoting.headers import ResetOffsetRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.remoting.versions import get_version_desc

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(router: RequestRouter, broker: Broker) -> None:
    async def reset_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)

        def fail(code: int, remark: str) -> RemotingCommand:
            return request.make_response(code, remark=remark)

        problem = topic_problem(h.topic)
        tc = broker.topics.get(h.topic) if problem is None else None
        if tc is None:
            return fail(ResponseCode.SYSTEM_ERROR,
                        f"[reset-offset] reset offset failed, no topic in this broker. topic={h.topic}")
        store, name = broker.store, broker.config.broker_name
        table: dict[QueueKey, int] = {}
        for queue_id in range(tc.write_queue_nums):
            committed = broker.offsets.query(h.group, h.topic, queue_id)
            if committed == -1:
                return fail(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{h.group}> not exist")
            if h.timestamp_ms == -1:
                target = store.max_offset(h.topic, queue_id)
            else:
                target = max(0, store.offset_by_time(h.topic, queue_id, h.timestamp_ms))
            table[(h.topic, name, queue_id)] = target if h.is_force or target < committed else committed
        info = broker.clients.group(h.group)
        channels = list(info.channels.values()) if info is not None else []
        if not channels:
            return fail(ResponseCode.CONSUMER_NOT_ONLINE,
                        f"Consumer not online, so can not reset offset, Group: {h.group} Topic: {h.topic} "
                        f"Timestamp: {h.timestamp_ms}")
        old = [c for c in channels if c.version < MQVersion.V3_0_7_SNAPSHOT]
        if old:
            return fail(ResponseCode.SYSTEM_ERROR, f"the client does not support this feature. version="
                                                  f"{get_version_desc(old[0].version)}")
        ext = h.to_ext_fields()
        bodies = {for_c: encode_reset_offset_body(table, for_c=for_c) for for_c in (False, True)}
        for channel in channels:
            if isinstance(channel.connection, Connection) and not channel.connection.is_closed:
                body = bodies[channel.language == LanguageCode.CPP.name]
                command = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, ext, body, oneway=True)
                await broker.send_quietly(channel.connection, command)
        log.info("[reset-offset] group %s topic %s to %d (force %s): %s", h.group, h.topic, h.timestamp_ms,
                 h.is_force, table)
        # always the Map form: the one MQClientAPIImpl.invokeBrokerToResetOffset decodes, also for the CPP
        # language mqadmin's -c (reset C++ clients) gives its request
        return request.make_response(ResponseCode.SUCCESS, body=bodies[False])

    router.add(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset_offset)
