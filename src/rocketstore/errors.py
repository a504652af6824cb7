"""The one exception tree of rocketstore.

Every error the library raises on purpose derives from :class:`RocketStoreError`.  Where RocketMQ answers
with a status code (PutMessageStatus, GetMessageStatus) the store returns that status instead of raising;
exceptions are for broken input, broken files and broken connections.

This module imports nothing from the rest of the package.
"""

from __future__ import annotations

__all__ = [
    "ConnectionClosedError",
    "CorruptFileError",
    "EventLoopChoiceError",
    "FrameTooLargeError",
    "InvalidMessageIdError",
    "InvalidTopicError",
    "LoopBoundError",
    "MessageDecodeError",
    "MessageError",
    "MessageFieldError",
    "MessageTooLargeError",
    "OutOfMappingsError",
    "PropertiesTooLargeError",
    "ProtocolError",
    "RemotingError",
    "RequestTimeoutError",
    "RocketStoreError",
    "StoreClosedError",
    "StoreConfigError",
    "StoreError",
    "StoreLockedError",
    "TooManyOpenFilesError",
]


class RocketStoreError(Exception):
    """Base of every error rocketstore raises on purpose."""


# --- message codec ------------------------------------------------------------------------------


class MessageError(RocketStoreError):
    """A message or record that cannot be encoded or decoded."""


class MessageDecodeError(MessageError):
    """Bytes that are not a valid record (bad magic, truncated, inconsistent lengths)."""

    def __init__(self, reason: str, offset: int | None = None) -> None:
        self.reason = reason
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"cannot decode record{where}: {reason}")


class MessageTooLargeError(MessageError):
    def __init__(self, size_bytes: int, limit_bytes: int) -> None:
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes
        super().__init__(f"record of {size_bytes} bytes exceeds the limit of {limit_bytes} bytes")


class PropertiesTooLargeError(MessageError):
    def __init__(self, size_bytes: int, limit_bytes: int = 32767) -> None:
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes
        super().__init__(f"properties of {size_bytes} bytes exceed the limit of {limit_bytes} bytes")


class MessageFieldError(MessageError):
    """A numeric field of a message outside the range its record field can hold."""


class InvalidTopicError(MessageError):
    def __init__(self, topic: str, reason: str) -> None:
        self.topic = topic
        self.reason = reason
        super().__init__(f"invalid topic {topic!r}: {reason}")


class InvalidMessageIdError(MessageError):
    def __init__(self, message_id: str, reason: str) -> None:
        self.message_id = message_id
        super().__init__(f"invalid message id {message_id!r}: {reason}")


# --- store ----------------------------------------------------------------------------------------


class StoreError(RocketStoreError):
    """Something wrong with a store directory or its use."""


class CorruptFileError(StoreError):
    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(f"{path} at offset {offset}: {reason}")


class StoreClosedError(StoreError):
    def __init__(self) -> None:
        super().__init__("the store is closed")


class StoreLockedError(StoreError):
    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"the store at {path} is locked by a writer (another MessageStore, in this process or "
                         "another, or a RocketMQ broker)")


class StoreConfigError(StoreError):
    """A configuration value that cannot be used (wrong type, out of range, mismatching files)."""


class TooManyOpenFilesError(StoreError, OSError):
    """A store could not open its files: the process ran out of file descriptors (EMFILE: its
    RLIMIT_NOFILE, *limit*) or the system did (ENFILE: fs.file-max).  Still an OSError with that errno."""

    def __init__(self, path: str, error_number: int, limit: int | None, reason: str) -> None:
        self.path = path
        self.limit = limit
        self.reason = reason
        super().__init__(error_number, f"cannot open the store at {path}: {reason}")

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return type(self), (self.path, self.errno, self.limit, self.reason)


class OutOfMappingsError(StoreError, OSError):
    """A store could not memory-map its files (ENOMEM): the process has as many mappings as
    vm.max_map_count allows, or its address space is used up (RLIMIT_AS, ulimit -v).  Still an OSError
    with that errno."""

    def __init__(self, path: str, error_number: int, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(error_number, f"cannot open the store at {path}: {reason}")

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return type(self), (self.path, self.errno, self.reason)


# --- remoting -------------------------------------------------------------------------------------


class RemotingError(RocketStoreError):
    """Errors of the wire protocol and its transport."""


class ProtocolError(RemotingError):
    """Bytes on the wire that are not a valid remoting frame or header."""


class FrameTooLargeError(ProtocolError):
    def __init__(self, length_bytes: int, limit_bytes: int) -> None:
        self.length_bytes = length_bytes
        self.limit_bytes = limit_bytes
        super().__init__(f"frame of {length_bytes} bytes exceeds the limit of {limit_bytes} bytes")


class ConnectionClosedError(RemotingError):
    pass


class RequestTimeoutError(RemotingError):
    pass


class EventLoopChoiceError(RemotingError, ValueError):
    """``ROCKETSTORE_EVENT_LOOP`` names no loop kind, or names uvloop where it is not installed: a setting
    to correct, reported as such (the CLI prints it on one line) rather than quietly run on another loop."""


class LoopBoundError(RemotingError, RuntimeError):
    """A connection used from another event loop than its own (or from a forked child, whose loop is not the
    parent's): a programming error, not a network one, so never retried (every try would fail the same
    way).  Still a RemotingError for code that catches those."""
