"""The checkpoint file: three store timestamps in one 4096-byte page.

Layout (big-endian longs)::

    +0  physicMsgTimestamp   store time of the newest commitlog data known flushed
    +8  logicsMsgTimestamp   store time of the newest record known flushed into a consume queue
    +16 indexMsgTimestamp    end time of the newest full index file flushed
    +24 .. 4095              zeros
"""

from __future__ import annotations

import errno
import logging
import os
import struct

from rocketstore.store.mapped_file import sync_directory

__all__ = ["CHECKPOINT_BYTES", "CHECKPOINT_LAYOUT", "Checkpoint"]

CHECKPOINT_LAYOUT = struct.Struct(">qqq")
CHECKPOINT_BYTES = 4096

log = logging.getLogger(__name__)


class Checkpoint:
    def __init__(self, path: str, *, writable: bool) -> None:
        self.path = path
        self.writable = writable
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        #: the file's name is in its synced directory (it was there at the open, or a flush synced the store
        #: root once after creating it): lost with its entry at a power loss, the checkpoint would send
        #: recovery over the whole commitlog and drop every index file for a rebuild
        self._entry_durable = os.path.exists(path)
        if self._entry_durable:
            with open(path, "rb") as fh:
                head = fh.read(CHECKPOINT_LAYOUT.size)
            if len(head) == CHECKPOINT_LAYOUT.size:
                (self.physic_msg_timestamp, self.logics_msg_timestamp,
                 self.index_msg_timestamp) = CHECKPOINT_LAYOUT.unpack(head)

    def min_timestamp(self) -> int:
        """The recovery bound: min(physic, logics) minus 3 s of slack, never negative."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp(), self.index_msg_timestamp)

    def flush(self) -> None:
        if not self.writable:
            return
        page = bytearray(CHECKPOINT_BYTES)
        CHECKPOINT_LAYOUT.pack_into(page, 0, self.physic_msg_timestamp, self.logics_msg_timestamp,
                                    self.index_msg_timestamp)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            # out of descriptors (RLIMIT_NOFILE, say a burst of connections to the broker): as for a full
            # disk below, the next flush writes it; failing here fenced the store until it was reopened
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            log.warning("cannot write the checkpoint %s: %s", self.path, exc)
            return
        try:
            os.pwrite(fd, page, 0)
            os.fdatasync(fd)
        except OSError as exc:
            # A full disk fails the first write of the file (its page is not allocated yet): the checkpoint
            # only shortens abnormal recovery's walk (missing or older, recovery walks more, loses nothing),
            # so this is no reason to fence the store; the next flush writes it again.
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            log.warning("cannot write the checkpoint %s: %s", self.path, exc)
            return
        finally:
            os.close(fd)
        if not self._entry_durable:  # (after the close: the sync needs a descriptor of its own)
            try:
                sync_directory(os.path.dirname(os.path.abspath(self.path)))
            except OSError as exc:
                # as above (out of descriptors, a full disk): the next flush syncs it
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.EDQUOT):
                    raise
                log.warning("cannot sync the directory of the checkpoint %s: %s", self.path, exc)
                return
            self._entry_durable = True
