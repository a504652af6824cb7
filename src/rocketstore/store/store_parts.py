"""What the facade's base classes (writes.py, opening.py, lookups.py, store_admin.py) use of MessageStore,
declared for the type checker; MessageStore (message_store.py) sets each attribute and defines each method.

Must not import: message_store (the facade); broker, remoting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketstore.message.host import HostAddress
    from rocketstore.store.background import StoreThreads
    from rocketstore.store.checkpoint import Checkpoint
    from rocketstore.store.cleanup import Cleaner
    from rocketstore.store.commitlog import CommitLog
    from rocketstore.store.config import StoreConfig
    from rocketstore.store.consume_queue import ConsumeQueueTable
    from rocketstore.store.dispatch import Dispatcher
    from rocketstore.store.index_file import IndexService
    from rocketstore.store.reads import StoreReader
    from rocketstore.store.recovery import RecoveryReport

__all__ = ["StoreParts"]


class StoreParts:
    """The state MessageStore's base classes share with it (annotations only: nothing at run time)."""

    config: StoreConfig
    read_only: bool
    _index_wanted: bool
    last_exit_ok: bool
    recovery: RecoveryReport
    _writable: bool
    _closed: bool
    _closing_thread: int | None
    _fenced: str | None
    _offsets_at_close: tuple[int, int, int]
    _delay_levels: dict[int, int]
    _max_delay_level: int
    _refuse_writes: bool
    _store_host: HostAddress
    _store_host_bytes: bytes
    _max_message_bytes: int
    _last_host: tuple[HostAddress | None, bytes]
    _last_queue_key: tuple[str, int]
    _memory_for_hot_bytes: int
    _commitlog: CommitLog
    _queues: ConsumeQueueTable
    _checkpoint: Checkpoint
    _index: IndexService | None
    _dispatcher: Dispatcher
    _cleaner: Cleaner
    _reader: StoreReader
    _threads: StoreThreads

    if TYPE_CHECKING:
        def _check_open(self) -> None: ...

        def _close_files(self, clean: bool) -> None: ...

        def _segment_guard(self) -> str | None: ...

        def _update_refuse_writes(self) -> None: ...

        @property
        def max_commit_log_offset(self) -> int: ...
