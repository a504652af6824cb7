"""Client-side errors: a broker or name server answer that is not success, and missing routes.

``broker_error_for(code, remark)`` is the one table from response codes to exception classes (call sites
never switch on integers); each class says whether retrying elsewhere may help.  :func:`send_failed` is
what a send whose every try failed raises (:class:`SendFailedError`), :class:`SendCallTimeoutError` what a
send whose time ran out before its request went out raises.  :func:`logged` awaits periodic work whose
failures are logged rather than raised.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Sequence
from enum import StrEnum

from rocketstore.errors import ConnectionClosedError, RequestTimeoutError, RocketStoreError
from rocketstore.remoting.codes import ResponseCode
from rocketstore.repeats import FailureRuns

__all__ = [
    "BrokerError",
    "ClientError",
    "MessageIllegalError",
    "NoPermissionError",
    "NoRouteError",
    "QueryNotFoundError",
    "QueueNotInRouteError",
    "RequestCodeNotSupportedError",
    "SendCallTimeoutError",
    "SendFailedError",
    "ServiceNotAvailableError",
    "ServiceState",
    "state_of",
    "SubscriptionError",
    "SystemBusyError",
    "SystemError_",
    "TopicNotExistError",
    "UnitRoutingError",
    "broker_error_for",
    "logged",
    "send_failed",
    "state_not_ok",
]

#: FAQUrl.suggestTodo's text: 4.9.3 appends it to the messages of its client exceptions (every FAQ url of
#: 4.9.3 is this one page) after a line break; here after a space, so an error stays one line in logs and
#: in the CLI's "rocketstore: error:" / "warning:" lines
FAQ_SUFFIX = " See http://rocketmq.apache.org/docs/faq/ for further details."
#: ClientErrorCode values 4.9.3's sendDefaultImpl gives its MQClientException for a last error that is a
#: connection failure, a time-out (the response code of a broker's error answer is that answer's code)
CONNECT_BROKER_EXCEPTION = 10001
ACCESS_BROKER_TIMEOUT = 10002


class ClientError(RocketStoreError):
    """Errors of the client layer."""


class ServiceState(StrEnum):
    """Where a client is in its life, named as 4.9.3's ServiceState (a client's ``service_state``): a start
    is taken only in CREATE_JUST; one that failed leaves START_FAILED for good (shutting down does not
    change it), as DefaultMQProducerImpl / DefaultMQPushConsumerImpl / DefaultLitePullConsumerImpl.start
    set START_FAILED before their checks and RUNNING only at the end."""

    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"


def state_of(*, started: bool, shut_down: bool, start_failed: bool) -> ServiceState:
    """A client's ServiceState from its flags, as 4.9.3's clients keep it: START_FAILED for good after a start
    that failed (shutting down does not change it), else SHUTDOWN_ALREADY once shut down, else RUNNING once
    started, else CREATE_JUST."""
    if start_failed:
        return ServiceState.START_FAILED
    if shut_down:
        return ServiceState.SHUTDOWN_ALREADY
    return ServiceState.RUNNING if started else ServiceState.CREATE_JUST


def state_not_ok(kind: str, state: str, cause: str = "", *, started_once: bool = False) -> str:
    """4.9.3's words for a client used in a state that refuses it (makeSureStateOK's "The producer service
    state not OK, SHUTDOWN_ALREADY"; a second start's "The PushConsumer service state not OK, maybe started
    once, RUNNING"), the FAQ link, then what it is here (*cause*, when given) after "Cause: "."""
    again = "maybe started once, " if started_once else ""
    words = f"The {kind} service state not OK, {again}{state}{FAQ_SUFFIX}"
    return f"{words} Cause: {cause}" if cause else words


class NoRouteError(ClientError):
    """No route for *topic* (to send to it, or read it).  ``str()`` starts with 4.9.3's words for it
    (*words*; by default DefaultMQProducerImpl.sendDefaultImpl's "No route info of this topic: <topic>" and
    the FAQ link), then what went wrong here (``reason``), after "Cause: "."""

    def __init__(self, topic: str, reason: str = "", *, words: str | None = None) -> None:
        self.topic = topic
        self.reason = reason
        if words is None:
            words = f"No route info of this topic: {topic}{FAQ_SUFFIX}"
        super().__init__(words + (f" Cause: {reason}" if reason else ""))


class QueueNotInRouteError(NoRouteError):
    """A send to a chosen queue (a queue id, a MessageQueue, an orderly send's selected queue) that no
    publish queue of the topic's route is: the topic has a route, that queue is not in it.  A NoRouteError
    (there is no route to that queue; code that catches NoRouteError keeps catching it), headed by what
    4.9.3 says of it rather than "No route info of this topic": for a broker not in the route,
    sendKernelImpl's "The broker[<name>] not exist"; for a queue id its brokers lack, the words of the
    broker's refusal (msgCheck's "request queueId[<n>] is illegal"), here said before anything is sent.
    ``broker_name`` is the chosen queue's broker (None for a bare queue id), ``queue_id`` its id."""

    def __init__(self, topic: str, queue_id: int, broker_name: str | None, reason: str,
                 *, broker_missing: bool) -> None:
        self.queue_id = queue_id
        self.broker_name = broker_name
        if broker_missing:
            words = f"The broker[{broker_name}] not exist{FAQ_SUFFIX}"
        else:
            words = f"request queueId[{queue_id}] is illegal, topic: {topic}{FAQ_SUFFIX}"
        super().__init__(topic, reason, words=words)


class BrokerError(ClientError):
    """A non-success answer; ``code`` and ``remark`` are the response's."""

    retriable = False

    def __init__(self, code: int, remark: str | None) -> None:
        self.code = code
        self.remark = remark
        try:
            name = ResponseCode(code).name
        except ValueError:
            name = str(code)
        super().__init__(f"{name} ({code}): {remark or ''}".rstrip(": "))


class SystemError_(BrokerError):  # trailing underscore: not the builtin SystemError
    retriable = True


class SystemBusyError(BrokerError):
    retriable = False  # not among 4.9.3's retryResponseCodes: a busy broker sheds load, a send is not repeated


class RequestCodeNotSupportedError(BrokerError):
    pass


class MessageIllegalError(BrokerError):
    pass


class ServiceNotAvailableError(BrokerError):
    retriable = True


class NoPermissionError(BrokerError):
    retriable = True  # NO_PERMISSION is among 4.9.3's DefaultMQProducer.retryResponseCodes


class TopicNotExistError(BrokerError):
    retriable = True


class SubscriptionError(BrokerError):
    pass


class UnitRoutingError(BrokerError):
    """NO_BUYER_ID or NOT_IN_CURRENT_UNIT (unit-routing answers no rocketstore broker gives): among 4.9.3's
    DefaultMQProducer.retryResponseCodes, so a send tries another broker on them as a Java producer does."""

    retriable = True


class QueryNotFoundError(BrokerError):
    pass


_TABLE: dict[int, type[BrokerError]] = {
    ResponseCode.SYSTEM_ERROR: SystemError_,
    ResponseCode.SYSTEM_BUSY: SystemBusyError,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: RequestCodeNotSupportedError,
    ResponseCode.MESSAGE_ILLEGAL: MessageIllegalError,
    ResponseCode.SERVICE_NOT_AVAILABLE: ServiceNotAvailableError,
    ResponseCode.NO_PERMISSION: NoPermissionError,
    ResponseCode.TOPIC_NOT_EXIST: TopicNotExistError,
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: SubscriptionError,
    ResponseCode.SUBSCRIPTION_NOT_EXIST: SubscriptionError,
    ResponseCode.SUBSCRIPTION_NOT_LATEST: SubscriptionError,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: SubscriptionError,
    ResponseCode.QUERY_NOT_FOUND: QueryNotFoundError,
    ResponseCode.NO_BUYER_ID: UnitRoutingError,
    ResponseCode.NOT_IN_CURRENT_UNIT: UnitRoutingError,
}


def broker_error_for(code: int, remark: str | None) -> BrokerError:
    return _TABLE.get(code, BrokerError)(code, remark)


class SendCallTimeoutError(RequestTimeoutError):
    """A send's time ran out before its request went out (the route look-up, or the tries before, spent it):
    nothing was sent.  4.9.3's RemotingTooMuchRequestException ("sendDefaultImpl call timeout"), which its
    callers get as it is, a request(...) too (it is thrown before the asynchronous send)."""


class SendFailedError(ClientError):
    """Every try of a send failed (4.9.3's sendDefaultImpl: MQClientException "Send [n] times, still failed,
    cost [x]ms, Topic: t, BrokersSent: [...]" with the FAQ link, the last try's exception as its cause).

    Never raised as this class alone: the instance raised is also of the last error's class (see
    :func:`send_failed`), so code that catches that class (``ServiceNotAvailableError``,
    ``RemotingError``, ``BrokerError``, ...) still catches it, and its attributes (a BrokerError's
    ``code`` and ``remark``) are the last error's.  ``last_error`` (also ``__cause__``) is that error,
    ``times`` the tries made, ``cost_ms`` their time, ``brokers_sent`` the broker of each try in order,
    ``response_code`` Java's getResponseCode of the MQClientException: the last broker answer's code, 10001
    (CONNECT_BROKER_EXCEPTION) after a connection failure, 10002 (ACCESS_BROKER_TIMEOUT) after a time-out,
    else -1.  ``str()`` is Java's message followed by the last error's."""

    topic: str
    times: int
    cost_ms: int
    brokers_sent: tuple[str | None, ...]
    response_code: int
    last_error: Exception


@functools.cache
def _send_failed_class(last_class: type[Exception]) -> type[SendFailedError]:
    """SendFailedError and *last_class* in one class (one per class of last error, made once)."""
    if issubclass(last_class, SendFailedError):
        return last_class
    return type("SendFailedError", (SendFailedError, last_class), {"__module__": __name__, "__doc__": None})


def send_failed(last_error: Exception, topic: str, times: int, cost_ms: int,
                brokers_sent: Sequence[str | None]) -> SendFailedError:
    """What a send raises after its *times* tries failed, the last with *last_error* (see SendFailedError):
    an instance of SendFailedError and of *last_error*'s class, carrying *last_error*'s attributes; the
    caller raises it ``from last_error``."""
    brokers = ", ".join("null" if name is None else name for name in brokers_sent)
    info = (f"Send [{times}] times, still failed, cost [{cost_ms}]ms, Topic: {topic}, "
            f"BrokersSent: [{brokers}]"
            f"{FAQ_SUFFIX} Last error: {type(last_error).__name__}: {last_error}")
    cls = _send_failed_class(type(last_error))  # type: ignore[arg-type]  # (typeshed: a class is hashable)
    error = cls.__new__(cls, info)  # not cls(...): the last error's class has its own __init__ arguments
    error.__dict__.update(last_error.__dict__)  # a BrokerError's code and remark, a NoRouteError's topic
    error.topic, error.times, error.cost_ms = topic, times, cost_ms
    error.brokers_sent = tuple(brokers_sent)
    if isinstance(last_error, BrokerError):
        error.response_code = last_error.code
    elif isinstance(last_error, ConnectionClosedError):
        error.response_code = CONNECT_BROKER_EXCEPTION
    elif isinstance(last_error, RequestTimeoutError):
        error.response_code = ACCESS_BROKER_TIMEOUT
    else:
        error.response_code = -1
    error.last_error = last_error
    return error


async def logged(log: logging.Logger, what: str, coro: Awaitable[None], level: int = logging.WARNING,
                 runs: FailureRuns | None = None) -> None:
    """Await *coro*; a client-side failure (a RocketStoreError or OSError: a broker gone, a refusal) is logged
    on *log* at *level* (a warning) instead of raised: for periodic work whose next round tries again.  With
    *runs* (work done every round, which fails every round while a broker is down), the failure counts in
    the run of *what* there: the first and every 1000th at *level*, the others at DEBUG, and the round that
    works after them at INFO."""
    try:
        await coro
    except (RocketStoreError, OSError) as exc:
        if runs is None:
            log.log(level, "%s failed: %s", what, exc)
        else:
            runs.failed(log, what, exc, level)
    else:
        if runs is not None:
            runs.worked(log, what)
