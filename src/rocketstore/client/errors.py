"""Client-side errors: a broker or name server answer that is not success, and missing routes.

``broker_error_for(code, remark)`` is the one table from response codes to exception classes (call sites
never switch on integers); each class says whether retrying elsewhere may help.  :func:`logged` awaits
periodic work whose failures are logged rather than raised.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from rocketstore.errors import RocketStoreError
from rocketstore.remoting.codes import ResponseCode

__all__ = [
    "BrokerError",
    "ClientError",
    "MessageIllegalError",
    "NoPermissionError",
    "NoRouteError",
    "QueryNotFoundError",
    "RequestCodeNotSupportedError",
    "ServiceNotAvailableError",
    "SubscriptionError",
    "SystemBusyError",
    "SystemError_",
    "TopicNotExistError",
    "broker_error_for",
    "logged",
]


class ClientError(RocketStoreError):
    """Errors of the client layer."""


class NoRouteError(ClientError):
    def __init__(self, topic: str, reason: str = "") -> None:
        self.topic = topic
        super().__init__(f"no route for topic {topic!r}" + (f": {reason}" if reason else ""))


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
}


def broker_error_for(code: int, remark: str | None) -> BrokerError:
    return _TABLE.get(code, BrokerError)(code, remark)


async def logged(log: logging.Logger, what: str, coro: Awaitable[None], level: int = logging.WARNING) -> None:
    """Await *coro*; a client-side failure (a RocketStoreError or OSError: a broker gone, a refusal) is logged
    on *log* at *level* (a warning) instead of raised: for periodic work whose next round tries again."""
    try:
        await coro
    except (RocketStoreError, OSError) as exc:
        log.log(level, "%s failed: %s", what, exc)
