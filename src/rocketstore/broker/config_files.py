"""The broker's JSON config files under ``<storePathRootDir>/config``: atomic writes, tolerant reads.

RocketMQ's ConfigManager writes ``<file>.tmp``, keeps the previous file as ``<file>.bak`` and renames; it
reads the ``.bak`` when the main file is missing or unreadable.  We write ``.tmp`` + fsync + rename (+ a
directory fsync) so the file is always whole, and keep the previous file whole as ``.bak`` (a hard link
renamed into place: no copy that a full disk could cut short).  Reading (the file or its ``.bak``) is
:mod:`rocketstore.config_json`'s, shared with the Spark side, which reads a store's files without a broker.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rocketstore.config_json import config_table, read_json_file
from rocketstore.files import write_text_atomically
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion

__all__ = ["BackgroundWriter", "FailureLog", "VersionedTable", "read_json_file", "write_json_atomically",
           "write_text_atomically"]

log = logging.getLogger(__name__)

S = TypeVar("S")
C = TypeVar("C")


class FailureLog:
    """The log of a write retried until it succeeds (a config file on a full disk, rewritten every few
    seconds): one line for a failure, none for the same failure again (DEBUG), one when the failure changes
    (another errno) and one when a write succeeds after failures.  Thread-safety: the caller's."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._log = logger
        self.what = what
        self._kind: tuple[type, object] | None = None

    def failed(self, exc: OSError) -> None:
        kind = (type(exc), exc.errno if exc.errno is not None else str(exc))
        if kind == self._kind:
            self._log.debug("still cannot write %s: %s", self.what, exc)
            return
        self._kind = kind
        self._log.error("cannot write %s: %s (tried again until it can be written; logged again only when "
                        "the failure changes)", self.what, exc)

    def succeeded(self) -> None:
        if self._kind is not None:
            self._kind = None
            self._log.warning("%s is written again", self.what)


class BackgroundWriter(Generic[S]):
    """Whole-file rewrites of a loop-owned table, made off the event loop and coalesced.

    4.9.3 persists topics.json / subscriptionGroup.json whole on every change, on the thread of the request
    that changed it; the broker's other requests run on other threads meanwhile.  Here every request runs on
    one event loop, and a whole rewrite of 10,000 topics (2 MB of JSON, two fsyncs) takes over 100 ms:
    written on the loop it stalled every send and pull that long, once per created topic.  So
    :meth:`changed` (on the loop) only counts the change and starts a task, which takes *snapshot()* on the
    loop (a cheap copy) and runs *write(snapshot)* on the loop's default executor; changes made while a
    write runs are taken by one next write.  :meth:`flush` waits for the changes made so far to be on disk,
    so a request that must be durable before it is answered waits without holding the loop.

    Writes land in change order: a write of an older snapshot never replaces a newer one (the one at close,
    say).  Without a running loop (tools, unit tests) :meth:`changed` writes at once, as before.
    """

    def __init__(self, snapshot: Callable[[], S], write: Callable[[S], None], what: str) -> None:
        self._snapshot = snapshot
        self._write = write
        self.what = what
        #: changes counted so far (on the loop) / the change count the file holds (set after each write)
        self.generation = 0
        self.on_disk = 0
        self._lock = threading.Lock()  # one write at a time, newest last
        #: the last write failed (a full disk): :meth:`retry` writes again, and so does the next change
        self.failed = False
        self.failures = FailureLog(log, what)
        self._task: asyncio.Task[None] | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def changed(self) -> None:
        """The table changed: write it soon (now, without a running loop)."""
        self.generation += 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.write_now()
            return
        if self._task is None:
            self._task = loop.create_task(self._run(loop))

    def write_now(self) -> None:
        """Write the table on this thread, whatever is pending (start, close, no loop); OSError if it fails
        (logged, see :class:`FailureLog`)."""
        self._write_generation(self.generation, self._snapshot())

    def retry(self) -> None:
        """On the loop: write again if the last write failed and none is under way (4.9.3 writes a table
        again only at its next change; a topic created on a full disk would be missing from the file until
        then, and from the broker after a kill -9)."""
        if self.failed and self._task is None:
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(self._run(loop))

    def _write_generation(self, generation: int, snapshot: S) -> None:
        with self._lock:
            if generation < self.on_disk:
                return  # a newer snapshot is on disk already
            try:
                self._write(snapshot)
            except OSError as exc:
                self.failed = True
                self.failures.failed(exc)
                raise
            self.failed = False
            self.failures.succeeded()
            self.on_disk = generation

    async def flush(self) -> None:
        """Wait until the changes made so far are on disk; the OSError of the write that failed them."""
        target = self.generation
        if self.on_disk >= target:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append((target, future))
        if self._task is None:  # the last write failed: try again
            self._task = loop.create_task(self._run(loop))
        await future

    async def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            while self.on_disk < self.generation or self.failed:
                generation = self.generation
                try:
                    await loop.run_in_executor(None, self._write_generation, generation, self._snapshot())
                except OSError as exc:  # logged by _write_generation
                    self._settle(generation, exc)
                    return  # the next change (or flush, or the write at close) tries again
                self._settle(generation, None)
        finally:
            self._task = None

    def _settle(self, generation: int, error: OSError | None) -> None:
        """Answer the waiters *generation* covers; after a failed write (*error*), every waiter."""
        keep = []
        for target, future in self._waiters:
            if error is None and target > generation:
                keep.append((target, future))
            elif not future.done():
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)
        self._waiters = keep


def write_json_atomically(path: str, obj: Any) -> None:
    """Replace *path* with *obj* as JSON laid out as 4.9.3's fastjson writes it (fastjson.dumps_pretty), but
    with int keys quoted, so the file stays strict JSON; a crash leaves either the old or the new file,
    never half of one."""
    write_text_atomically(path, fastjson.dumps_pretty(fastjson_plain(obj)))




def fastjson_plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): fastjson_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [fastjson_plain(v) for v in obj]
    return obj


class VersionedTable(Generic[C]):
    """Named configs and a data version in one file, as 4.9.3's ConfigManager subclasses keep topics.json and
    subscriptionGroup.json: ``{"dataVersion":{"counter":n,"timestamp":ms},"<table_key>":{"<name>":{...}}}``.

    The configs are frozen (a shallow copy of the table is a snapshot).  Every change bumps the data version
    and is written by a :class:`BackgroundWriter`: off the loop when one runs (:meth:`flush` awaits it), else
    at once.  Loop-bound."""

    def __init__(self, path: str, table_key: str, from_json: Callable[[dict[str, Any], str], C],
                 name_of: Callable[[C], str], table: dict[str, C]) -> None:
        """*from_json(raw, name)*: a config from the file's entry under *name*; *name_of*: the name a config
        is kept under when the file is loaded."""
        self.path = path
        self.table_key = table_key
        self._from_json = from_json
        self._name_of = name_of
        self.table = table
        self.data_version = DataVersion(int(time.time() * 1000), 0)
        self.writer: BackgroundWriter[tuple[DataVersion, dict[str, C]]] = BackgroundWriter(
            self._snapshot, self._write, path)
        #: name -> (config, its entry as the file lays it out): a config is frozen, so its text is rendered
        #: once, not at every rewrite of the whole file (2,000 topics: 15 ms a rewrite, one per created
        #: topic).  Touched by :meth:`_write` alone, one write at a time (the writer's lock).
        self._rendered: dict[str, tuple[C, str]] = {}

    def load(self) -> None:
        """Read the file (or its .bak); its entries override the ones the table holds."""
        loaded = read_json_file(self.path, self._decode)
        if loaded is None:
            return
        configs, version = loaded
        for config in configs:
            self.table[self._name_of(config)] = config
        if version is not None:
            self.data_version = version

    def _decode(self, obj: dict[str, Any]) -> tuple[list[C], DataVersion | None]:
        """The file's configs and data version (ProtocolError for a field of the wrong type)."""
        configs = config_table(obj, self.table_key, self._from_json)
        version = DataVersion.from_json(obj["dataVersion"]) if "dataVersion" in obj else None
        return configs, version

    def persist(self) -> None:
        """Write the file now, on this thread."""
        self.writer.write_now()

    async def flush(self) -> None:
        """Wait until every change made so far is in the file (the write runs off the loop)."""
        await self.writer.flush()

    async def flush_quietly(self) -> None:
        """:meth:`flush`, a failed write only logged (by the writer), as 4.9.3's ConfigManager.persist logs an
        IOException: the table has changed all the same, and the file is written again once it can be."""
        try:
            await self.writer.flush()
        except OSError:
            pass

    def replace_all(self, obj: dict[str, Any]) -> bool:
        """A slave's sync: take the master's answer (GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG:
        the table and dataVersion) whole when its data version differs from ours, and persist; True if it
        did."""
        version = DataVersion.from_json(obj.get("dataVersion") or {})
        table = obj.get(self.table_key)
        if version == self.data_version or not isinstance(table, dict):
            return False
        self.table = {str(name): self._from_json(raw, str(name)) for name, raw in table.items()
                      if isinstance(raw, dict)}
        self.data_version = version
        self.writer.changed()
        return True

    def changed(self) -> None:
        """A config was added, changed or removed: the next data version, written soon."""
        self.data_version = self.data_version.next(int(time.time() * 1000))
        self.writer.changed()

    def _snapshot(self) -> tuple[DataVersion, dict[str, C]]:
        return self.data_version, dict(self.table)  # the configs are frozen: a shallow copy is a snapshot

    def _write(self, snapshot: tuple[DataVersion, dict[str, C]]) -> None:
        """The file as write_json_atomically lays out ``{"dataVersion":..., table_key: {name: config}}``
        (fastjson's pretty layout), each entry's text kept from the last write while its config is the same
        object."""
        version, table = snapshot
        rendered = self._rendered
        kept: dict[str, tuple[C, str]] = {}
        entries = []
        for name, config in table.items():
            cached = rendered.get(name)
            if cached is None or cached[0] is not config:
                cached = (config, _table_entry(name, config.to_json()))  # type: ignore[attr-defined]
            kept[name] = cached
            entries.append(cached[1])
        self._rendered = kept
        head = fastjson.dumps_pretty({"dataVersion": version.to_json(), self.table_key: {}})
        if entries:  # head ends with the empty table's "{}\n}"
            head = head[:-4] + "{" + ",".join(entries) + "\n\t}\n}"
        write_text_atomically(self.path, head)


def _table_entry(name: str, value: Any) -> str:
    """``"<name>":{...}`` as fastjson's pretty layout writes it one level into the file's table: a line break
    and two tabs, then the member (its inner lines two tabs further in).  Rendered alone and indented after:
    the layout's strings hold no raw line break (json escapes it), and its escapes are per character."""
    text = fastjson.dumps_pretty({name: fastjson_plain(value)})  # '{\n\t"<name>":...\n}'
    return text[1:-2].replace("\n", "\n\t")
