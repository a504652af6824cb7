"""Keeps the page cache filled a window ahead of the commitlog's write position.

A put copies its record into the mapped segment.  The first store to each page of a fresh segment faults,
and the kernel allocates and zeroes a page-cache page for it, on the putting thread and under the GIL: on
this project's machines ~1.5-2 µs of kernel time per 1 KiB put, and some runs of a put loop twice that.
:class:`PageWarmer` reads the next *window_bytes* past the write position in its own thread
(:meth:`MappedFile.prefetch <rocketstore.store.mapped_file.MappedFile.prefetch>`, which releases the GIL),
so the writer finds the pages there.  Nothing is dirtied or pinned: it is RocketMQ's warmMapedFileEnable
(which writes and mlocks a whole segment before use) cut down to a few MiB at a time.

It looks at the last segment every few milliseconds while the writer moves, backing off to 50 ms while it
does not, and a segment that becomes the last one is warmed from its write position on.

Must not import: message_store (the facade), background; broker, remoting.
Thread-safety: one thread of its own reads the file queue's last segment and its ``wrote`` position (plain
ints, written by the single writer); :meth:`stop` joins it, and the owner stops it before closing the files.
"""

from __future__ import annotations

import logging
import threading

from rocketstore.store.file_queue import FileQueue
from rocketstore.store.mapped_file import OS_PAGE_BYTES

__all__ = ["PageWarmer"]

_log = logging.getLogger(__name__)

_MIN_SLEEP_S = 0.002
_MAX_SLEEP_S = 0.05


class PageWarmer:
    """Prefetches *window_bytes* past the write position of *files*' last segment, in a thread."""

    def __init__(self, files: FileQueue, window_bytes: int) -> None:
        self._files = files
        self.window_bytes = window_bytes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: (segment start offset, position warmed up to in it)
        self._segment = -1
        self.warmed_to = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="rocketstore-page-warmer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        sleep_s = _MIN_SLEEP_S
        while not self._stop.wait(sleep_s):
            try:
                worked = self.warm_once()
            except OSError as exc:  # a read error is the writer's to meet, not this helper's
                _log.warning("page warmer stops: %s", exc)
                return
            sleep_s = max(_MIN_SLEEP_S, sleep_s / 2) if worked else min(_MAX_SLEEP_S, sleep_s * 2)

    def warm_once(self) -> bool:
        """Prefetch up to a window past the write position once less than half a window is warm ahead of
        it; returns whether it read anything."""
        mf = self._files.last()
        if mf is None:
            return False
        wrote = mf.wrote
        if mf.start_offset != self._segment:
            self._segment = mf.start_offset
            self.warmed_to = 0
        window = self.window_bytes
        if self.warmed_to - wrote >= window // 2:
            return False
        start = max(self.warmed_to, wrote - wrote % OS_PAGE_BYTES)
        stop = min(mf.size_bytes, wrote + window)
        if start >= stop:
            return False
        self.warmed_to = start + mf.prefetch(start, stop)
        return True
