"""The rocketstore version a Spark query was planned with, checked first thing in each of its tasks.

A data source's reader or writer is created where the query is planned (a Python worker on the driver's
host) and pickled, with its options and partitions, to the executors' Python workers.  When an executor's
Python environment holds another rocketstore version, the objects unpickle into that version's classes and
fail later with an AttributeError or a wrong value, deep in a task.  So each reader and writer records the
version it was planned with, and every task compares it with its own before it touches anything else.

The option ``rocketstore.plannedVersion`` stands in for the planning version (Spark carries it to the tasks
with the other options): nothing sets it in normal use; the tests set it to plan a query "with another
version" on one machine.

Imports nothing of pyspark (a task imports this before anything else of a data source).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping

from rocketstore import __version__
from rocketstore.errors import RocketStoreError

__all__ = ["PLANNED_VERSION_OPTION", "VersionMismatchError", "check_task_version", "planned_version"]

PLANNED_VERSION_OPTION = "rocketstore.plannedVersion"


class VersionMismatchError(RocketStoreError):
    """A Spark task runs another rocketstore version than the one its query was planned with."""


def planned_version(options: Mapping[str, str] | None = None) -> str:
    """The version to record for a query: the ``rocketstore.plannedVersion`` option when given (names are
    case-insensitive, as Spark treats them), else the version installed here."""
    for key, value in (options or {}).items():
        if str(key).lower() == PLANNED_VERSION_OPTION.lower() and value is not None and str(value).strip():
            return str(value).strip()
    return __version__


def check_task_version(planned: object, what: str) -> None:
    """VersionMismatchError when *planned* (the version recorded at planning) is not this install's version.

    *planned* is whatever attribute the unpickled reader or writer holds: a reader pickled by a version
    without the attribute gives None."""
    if planned == __version__:
        return
    seen = "a rocketstore version without this check" if planned is None else f"rocketstore {planned}"
    raise VersionMismatchError(
        f"{what} was planned with {seen}, but this executor (host {socket.gethostname()}, python "
        f"{sys.executable}) runs rocketstore {__version__}: install the same rocketstore version on the "
        "driver and in every executor's Python environment")
