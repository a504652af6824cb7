"""The log of a failure that repeats.  A job tried again every few seconds (a pull, a heartbeat, a
rebalance, an offset commit, a slave's connection to its master) fails at every try while a peer is down,
for as long as it is down.  Of such a run of failures in a row the first and every 1000th are logged at
their level with the count so far, the others at DEBUG, and the first try that works after a run at INFO.
A caller may name the kind of each failure (``cause``): one of another kind than the run's starts a new run,
so its first is logged too (a master back up that now refuses this slave, after refusing connections while
it was down: the HA client names the exception class).  Jobs whose failures may alternate between classes
(a refused connect one try, a time-out the next) name none.

:class:`FailureRun` counts the run of one job (its caller logs); :class:`FailureRuns` keeps one run per job
of a client, named by what the job is (``"heartbeat to 127.0.0.1:10911"``), and logs.  Neither is
thread-safe: the jobs of one event loop (or one thread) use one.
"""

from __future__ import annotations

import logging

__all__ = ["EVERY", "FailureRun", "FailureRuns"]

#: of a run of failures, the first and every EVERY-th after it are logged at their own level
EVERY = 1000


class FailureRun:
    """The failures in a row of one job; ``count`` is how many so far (0: it works)."""

    __slots__ = ("cause", "count")

    def __init__(self) -> None:
        self.count = 0
        #: the kind of the run's failures (what :meth:`failed` was last given)
        self.cause: object = None

    def failed(self, level: int = logging.WARNING, cause: object = None) -> int:
        """Count one more failure; the level to log it at: *level* for the first of the run and every
        EVERY-th after it (1, 1001, 2001, ...), DEBUG for the others.  A *cause* other than the last
        one's starts a new run."""
        if cause != self.cause:
            self.cause = cause
            self.count = 0
        self.count += 1
        return level if self.count % EVERY == 1 else logging.DEBUG

    def ended(self) -> int:
        """A try worked: the failures of the run it ends (0: there was none); the count starts again."""
        count, self.count, self.cause = self.count, 0, None
        return count


class FailureRuns:
    """The runs of failures of a client's periodic jobs, one per job, logged on the caller's *log*:
    ``"<what> failed: <error> (<n> in a row)"`` at the caller's level for the first and every EVERY-th, at
    DEBUG for the others, and ``"<what> works again after <n> failure(s)"`` at INFO when the job works
    after a run."""

    def __init__(self) -> None:
        self._runs: dict[str, FailureRun] = {}  # only the jobs failing now

    def failed(self, log: logging.Logger, what: str, exc: BaseException, level: int = logging.WARNING) -> None:
        run = self._runs.get(what)
        if run is None:
            run = self._runs[what] = FailureRun()
        log.log(run.failed(level), "%s failed: %s (%d in a row)", what, exc, run.count)

    def worked(self, log: logging.Logger, what: str) -> None:
        run = self._runs.pop(what, None)
        if run is not None:
            log.info("%s works again after %d failure(s)", what, run.count)
