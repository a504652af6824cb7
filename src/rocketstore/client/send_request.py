"""What every send path of a :class:`~rocketstore.client.producer.Producer` shares, message by message: the
checks before a send (Java's Validators.checkMessage and the producer's state), where a topic's sends go
under the route last seen, the body compression (tryToCompressMessage), the SEND_MESSAGE_V2 request's
extFields and the per-queue frame templates made from them, and the :class:`SendResult` a broker's answer
makes.  :class:`SendRequests` is the base class of the producer's send paths; the retries, the round-robin
and the trace are theirs.  These methods are the per-message path: they stay methods (one attribute
look-up, as before the split) and a subclass may override them (the transaction producer's half messages
override ``_header`` and ``_ext_fields_v2``)."""

from __future__ import annotations

import time
import zlib

from rocketstore.client.errors import (
    ClientError,
    MessageIllegalError,
    SendCallTimeoutError,
    broker_error_for,
    state_not_ok,
)
from rocketstore.client.outgoing_message import (
    _SEND_STATUS,
    SendResult,
    _body_problem,
    _new_send_result,
    topic_problem,
)
from rocketstore.client.producer_instance import ProducerInstance
from rocketstore.client.queue_choice import _new_targets, _Targets
from rocketstore.client.route import MessageQueue, answer_long
from rocketstore.client.trace import DEFAULT_REGION_ID
from rocketstore.message.record import SysFlag
from rocketstore.remoting.bodies import TopicRouteData
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.templates import JsonRequestTemplate

__all__ = ["SendRequests", "send_call_timeout"]

_SUCCESS = int(ResponseCode.SUCCESS)
_COMPRESSED = int(SysFlag.COMPRESSED)


def send_call_timeout(queue_id: int | None) -> SendCallTimeoutError:
    """What a send whose timeout is spent before its request goes out raises (4.9.3's
    RemotingTooMuchRequestException, its wording): sendDefaultImpl's, or sendKernelImpl's for a chosen queue
    (send(msg, mq) looks the route up there)."""
    return SendCallTimeoutError(f"{'sendDefaultImpl' if queue_id is None else 'sendKernelImpl'} call timeout")


class SendRequests(ProducerInstance):
    """The per-send building blocks (see the module's docstring).  The fields below are the Producer's
    (its ``__init__`` sets them)."""

    max_message_size: int
    compress_msg_body_over_howmuch: int
    compress_level: int
    #: topic -> where its sends go under the route last seen: recomputed only when the route changes
    _targets: dict[str, _Targets]
    #: (group, topic, queue id, batch, flag, code, with properties, sysFlag) -> the request frames' template
    _frame_templates: dict[tuple[str, str, int, bool, int, int, bool, int], JsonRequestTemplate]
    #: topics that passed topic_problem, checked again only when this set is cleared
    _checked_topics: set[str]

    def _check(self, topic: str, body: bytes | None) -> None:
        """Refuse a send once close() began with ClientError (Java's "The producer service state not OK,
        SHUTDOWN_ALREADY"), and what Java's Validators.checkMessage refuses before a send (the topic, then
        *body*, when given) with MessageIllegalError; nothing is sent."""
        if self.closed:
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the producer is closed"))
        if topic not in self._checked_topics:  # the first send to a topic (or a bad one): the group's name too
            self._check_group()
            problem = topic_problem(topic)
            if problem is not None:
                raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, problem)
            if len(self._checked_topics) >= 4096:
                self._checked_topics.clear()
            self._checked_topics.add(topic)
        if body is not None:
            problem = _body_problem(body, self.max_message_size)
            if problem is not None:
                raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, problem)


    def _targets_of(self, topic: str, route: TopicRouteData) -> _Targets:
        targets = self._targets.get(topic)
        if targets is not None and targets.route is route:
            return targets
        targets = self._targets[topic] = _new_targets(topic, route)
        return targets


    def _compressed(self, body: bytes) -> tuple[bytes, int]:
        """(body, sysFlag) as the Java producer's tryToCompressMessage leaves them: a body of
        compress_msg_body_over_howmuch bytes or more zlib-compressed and flagged COMPRESSED."""
        if len(body) >= self.compress_msg_body_over_howmuch:
            return zlib.compress(body, self.compress_level), _COMPRESSED
        return body, 0


    def _header(self, topic: str, queue_id: int, properties: str, batch: bool, flag: int, sys_flag: int = 0
                ) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group=self.group, topic=topic, default_topic=self.create_topic_key,
            default_topic_queue_nums=self.default_topic_queue_nums, queue_id=queue_id, sys_flag=sys_flag,
            born_timestamp=int(time.time() * 1000), flag=flag, properties=properties or None,
            reconsume_times=0, unit_mode=False, batch=batch)


    def _ext_fields_v2(self, topic: str, queue_id: int, properties: str, batch: bool, flag: int,
                       sys_flag: int = 0) -> dict[str, str]:
        """``self._header(...).to_ext_fields_v2()`` written out: the same dict (same keys, values and
        order, a unit test compares them) without building and walking a 13-field frozen dataclass per send.
        Only cold paths build it per send (bodies of 16 KiB and more); the usual send goes through the frame
        template it makes (:meth:`_frame_template`)."""
        ext = {"a": self.group, "b": topic, "c": self.create_topic_key,
               "d": self._default_topic_queue_nums_text, "e": str(queue_id), "f": str(sys_flag),
               "g": str(int(time.time() * 1000)), "h": str(flag)}
        if properties:
            ext["i"] = properties
        ext["j"] = "0"
        ext["k"] = "false"
        ext["m"] = "true" if batch else "false"
        return ext


    def _frame_template(self, topic: str, queue_id: int, batch: bool, flag: int, code: int,
                        with_properties: bool, sys_flag: int = 0) -> JsonRequestTemplate:
        """The template of the request frames :meth:`_ext_fields_v2`'s extFields make: everything but the
        born timestamp ("g") and the properties ("i", when there are any) quoted once per queue."""
        key = (self.group, topic, queue_id, batch, flag, code, with_properties, sys_flag)
        template = self._frame_templates.get(key)
        if template is None:
            if len(self._frame_templates) >= 4096:
                self._frame_templates.clear()
            ext = self._ext_fields_v2(topic, queue_id, "-" if with_properties else "", batch, flag, sys_flag)
            template = self._frame_templates[key] = JsonRequestTemplate(
                code, ext, ("g", "i") if with_properties else ("g",))
        return template


    @staticmethod
    def _result(response: RemotingCommand, msg_id: str, mq: MessageQueue) -> SendResult:
        ext = response.ext_fields
        if response.code == _SUCCESS:  # the usual answer: the queue asked for, a decimal offset
            queue_id_text = ext.get("queueId")
            offset_text = ext.get("queueOffset")
            if (queue_id_text is not None and offset_text is not None and queue_id_text.isdecimal()
                    and int(queue_id_text) == mq.queue_id):
                try:
                    offset = int(offset_text)
                except ValueError:
                    offset = answer_long(response, "queueOffset")  # raises HeaderFieldError
                return _new_send_result("SEND_OK", msg_id, ext.get("msgId", ""), mq, offset,
                                        ext.get("MSG_REGION") or DEFAULT_REGION_ID, ext.get("TRACE_ON") != "false")
        status = _SEND_STATUS.get(response.code)
        if status is None:
            raise broker_error_for(response.code, response.remark)
        # (an answer whose numbers do not decode: HeaderFieldError, a RemotingError, so the send is retried as
        # 4.9.3 retries the RemotingCommandException of an answer its header decoding refuses)
        queue_id = answer_long(response, "queueId", mq.queue_id)
        return SendResult(status, msg_id, ext.get("msgId", ""),
                          mq if queue_id == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, queue_id),
                          answer_long(response, "queueOffset", -1),
                          ext.get("MSG_REGION") or DEFAULT_REGION_ID,
                          ext.get("TRACE_ON") != "false")

