"""The store directory's ``lock`` file: one writer per store, in this process and against a Java broker.

Owns the exclusive lock a writable store holds on ``<root>/lock`` while it is open, and this process's
registry of locked paths (a second open in the same process is refused before asking the kernel, which
would grant an open-file-description lock to the same process twice).

Must not import: the rest of the store (it knows paths and descriptors only), broker, remoting.
Thread-safety: acquire and release may be called from any thread; the registry is guarded by one lock.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading

from rocketstore.errors import StoreLockedError

__all__ = ["StoreLock"]

_LOCKED_PATHS: set[str] = set()
_LOCKED_PATHS_GUARD = threading.Lock()


def _lock_first_byte(fd: int) -> None:
    """Exclusive lock on byte 0 of the lock file, conflicting with a Java broker's FileChannel.tryLock(0, 1).

    On Linux an open-file-description lock: a classic POSIX record lock (lockf) is dropped as soon as the
    process closes ANY descriptor of the file, e.g. a backup tool reading it in-process.  OFD and POSIX
    locks on the same byte still conflict, so the Java broker stays locked out.  Raises OSError if held.
    """
    ofd_setlk = getattr(fcntl, "F_OFD_SETLK", None)
    if ofd_setlk is None:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        return
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padded to its C size
    fcntl.fcntl(fd, ofd_setlk, struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))


class StoreLock:
    """The lock of one store directory: :meth:`acquire` once, :meth:`release` any number of times."""

    def __init__(self) -> None:
        self._lock_fd = -1
        self._lock_real = ""

    def acquire(self, root: str) -> None:
        """Take ``<root>/lock``; StoreLockedError if this process or another (a Java broker) holds it."""
        path = os.path.join(root, "lock")
        real = os.path.realpath(path)
        with _LOCKED_PATHS_GUARD:
            if real in _LOCKED_PATHS:
                raise StoreLockedError(root)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _lock_first_byte(fd)
            except OSError as exc:
                os.close(fd)
                raise StoreLockedError(root) from exc
            try:
                os.pwrite(fd, b"lock", 0)
            except OSError:
                # (a full disk): let go of the lock with its descriptor, or every later open in this
                # process would be refused as locked by a writer that is no more
                os.close(fd)
                raise
            _LOCKED_PATHS.add(real)
            self._lock_fd = fd
            self._lock_real = real

    def release(self) -> None:
        with _LOCKED_PATHS_GUARD:
            # taken under the guard: two racing releases must not both close the descriptor
            fd, self._lock_fd = self._lock_fd, -1
            if fd < 0:
                return
            _LOCKED_PATHS.discard(self._lock_real)
        os.close(fd)
