"""Result values and status enums of the store API, named as RocketMQ names them."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from rocketstore.errors import MessageDecodeError
from rocketstore.message.host import HostAddress
from rocketstore.message.message_id import encode_offset_message_id, encode_offset_message_ids
from rocketstore.message.record import StoredMessage, decode_record

__all__ = ["GetMessageStatus", "GetResult", "PutMessageStatus", "PutResult", "QueryResult"]


class PutMessageStatus(enum.Enum):
    PUT_OK = 0
    FLUSH_DISK_TIMEOUT = 1
    FLUSH_SLAVE_TIMEOUT = 2
    SLAVE_NOT_AVAILABLE = 3
    SERVICE_NOT_AVAILABLE = 4
    CREATE_MAPEDFILE_FAILED = 5
    MESSAGE_ILLEGAL = 6
    PROPERTIES_SIZE_EXCEEDED = 7
    OS_PAGECACHE_BUSY = 8
    UNKNOWN_ERROR = 9
    LMQ_CONSUME_QUEUE_NUM_EXCEEDED = 10

    @property
    def ok(self) -> bool:
        return self is PutMessageStatus.PUT_OK


class GetMessageStatus(enum.Enum):
    FOUND = 0
    NO_MATCHED_MESSAGE = 1
    MESSAGE_WAS_REMOVING = 2
    OFFSET_FOUND_NULL = 3
    OFFSET_OVERFLOW_BADLY = 4
    OFFSET_OVERFLOW_ONE = 5
    OFFSET_TOO_SMALL = 6
    NO_MATCHED_LOGIC_QUEUE = 7
    NO_MESSAGE_IN_QUEUE = 8


class PutResult(NamedTuple):
    """Outcome of a put.  For a batch, offsets are those of the first message and ``message_count`` > 1.

    An immutable NamedTuple rather than a frozen dataclass: it is built once per put, and a frozen
    dataclass's ``__init__`` costs several times more (measured: ~3 us of a ~10 us put).
    """

    status: PutMessageStatus
    commit_log_offset: int = -1
    wrote_bytes: int = 0
    queue_offset: int = -1
    store_timestamp: int = 0
    message_count: int = 0
    topic: str = ""
    queue_id: int = 0
    remark: str = ""
    store_host: HostAddress | None = None
    #: sizes of the records of a batch (empty for a single message)
    record_sizes: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK

    @property
    def msg_id(self) -> str:
        """Offset message id(s): one, or a batch's joined by commas as RocketMQ answers them."""
        if self.store_host is None or self.commit_log_offset < 0:
            return ""
        if not self.record_sizes:
            return encode_offset_message_id(self.store_host, self.commit_log_offset)
        return encode_offset_message_ids(self.store_host, self.commit_log_offset, self.record_sizes)


@dataclass(frozen=True, slots=True)
class GetResult:
    """Outcome of a get: the raw records (as a pull response carries them) and the offsets to go on from."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    records: tuple[bytes, ...] = ()
    queue_offsets: tuple[int, ...] = ()
    suggest_pulling_from_slave: bool = False

    @property
    def messages(self) -> list[StoredMessage]:
        """The records decoded, each body checked against its CRC: a record damaged on disk after it was
        stored (the recovery at open re-checks only the commitlog's last segments) is a MessageDecodeError
        naming its queue offset, not a message handed out as intact (4.9.3's getMessage checks nothing).
        *records* hold the bytes as they are, for a caller that would skip it."""
        try:
            return [decode_record(r, check_crc=True) for r in self.records]
        except MessageDecodeError:
            for i, r in enumerate(self.records):  # (only on failure: which one, at which queue offset)
                try:
                    decode_record(r, check_crc=True)
                except MessageDecodeError as exc:
                    at = self.queue_offsets[i] if i < len(self.queue_offsets) else None
                    raise MessageDecodeError(f"{exc.reason} (the record at queue offset {at})") from exc
            raise

    @property
    def message_count(self) -> int:
        return len(self.records)

    @property
    def buffer_total_bytes(self) -> int:
        return sum(len(r) for r in self.records)


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Outcome of a query by key: hits in commitlog order plus the index's last update point."""

    messages: tuple[StoredMessage, ...]
    index_last_update_timestamp: int
    index_last_update_phy_offset: int
