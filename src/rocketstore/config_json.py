"""Reading the broker's JSON config files (``<storePathRootDir>/config/*.json``), for every layer that reads
them: the broker at start, and the Spark source and report, which read a store directory's files without a
broker.  One reader, so a file the broker would refuse or take from its ``.bak`` reads the same everywhere.

4.9.3's ConfigManager.load reads ``<file>.bak`` when the file is missing, empty or fails to decode, and fails
(the broker does not start) when the ``.bak`` is needed and fails too.  Files are parsed with
:func:`rocketstore.remoting.fastjson.loads`, so ones a Java broker wrote (bare integer keys, pretty printed)
load too.  The writing side is :mod:`rocketstore.files` and ``rocketstore.broker.config_files``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

from rocketstore.errors import CorruptFileError, ProtocolError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import TopicConfig

__all__ = ["TOPIC_GROUP_SEPARATOR", "config_table", "offset_table_of", "parse_offset_table",
           "read_json_file", "read_offset_table", "topic_config_entry"]

log = logging.getLogger(__name__)

C = TypeVar("C")

_UTF8_BOM = b"\xef\xbb\xbf"

#: consumerOffset.json's keys: ``<topic>@<group>``
TOPIC_GROUP_SEPARATOR = "@"


def read_json_file(path: str, decode: Callable[[dict[str, Any]], Any] | None = None) -> Any | None:
    """The parsed content of *path* (or of ``path.bak`` when *path* is missing or unreadable); None if
    neither exists.  Empty files count as missing.  With *decode*, its answer for the parsed object instead,
    a ProtocolError from it counting as unreadable (4.9.3's ConfigManager.load reads the .bak when decode
    throws, a field of the wrong type included).

    Raises CorruptFileError when the ``.bak`` is needed and is there but unreadable too: 4.9.3's
    ConfigManager.load then fails and the broker does not start, rather than start with an empty table and
    overwrite both files (lost topics, groups and consumer offsets).  Also when *path* is unreadable and
    there is no ``.bak`` (or an empty one), where 4.9.3 starts with an empty table: its first write made
    the unreadable file the ``.bak`` and the next one replaced that too, so a topics.json or
    consumerOffset.json with one typo lost every topic or offset it held (the name server's kvConfig.json
    is refused the same way)."""
    unreadable: ProtocolError | None = None
    for candidate in (path, path + ".bak"):
        try:
            with open(candidate, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            continue
        data = data.removeprefix(_UTF8_BOM)  # (an editor's byte order mark: fastjson skips it)
        if not data.strip():
            continue
        try:
            obj = fastjson.loads(data)
            if obj is not None and not isinstance(obj, dict):
                # fastjson cannot read an array or a scalar into the manager's object: unreadable too
                raise ProtocolError(f"a JSON {type(obj).__name__}, not an object")
            return obj if decode is None or obj is None else decode(obj)
        except ProtocolError as exc:
            log.error("cannot parse %s: %s", candidate, exc)
            if candidate != path:
                name = os.path.basename(path)
                raise CorruptFileError(candidate, 0, f"cannot parse it ({exc}) and {name} is missing or "
                                       "unreadable too; repair or remove the files") from exc
            unreadable = exc
            continue
    if unreadable is not None:
        bak = os.path.basename(path) + ".bak"
        raise CorruptFileError(path, 0, f"cannot parse it ({unreadable}) and there is no {bak} to read "
                               "instead; repair or remove the file") from unreadable
    return None


def config_table(obj: dict[str, Any], table_key: str,
                 from_json: Callable[[dict[str, Any], str], C]) -> list[C]:
    """The configs of a topics.json / subscriptionGroup.json object's table *table_key* (``{"<name>":{...}}``,
    *from_json(raw, name)* each); none when the file has no table.  A table or entry that is no object, or a
    field of the wrong type, is a ProtocolError (so :func:`read_json_file` takes the ``.bak``, as 4.9.3 does
    when fastjson cannot decode the file into the manager's map)."""
    configs: list[C] = []
    if table_key not in obj:
        return configs
    for name, raw in _object_table(obj, table_key).items():
        if not isinstance(raw, dict):
            raise ProtocolError(f"{table_key} entry {str(name)!r:.80} is no JSON object")
        try:
            configs.append(from_json(raw, str(name)))
        except ValueError as exc:  # (a subscription group's number field that is no number)
            raise ProtocolError(f"{table_key} entry {str(name)!r:.80}: {exc}") from exc
    return configs


def topic_config_entry(raw: dict[str, Any], name: str) -> TopicConfig:
    """topics.json's entry *raw* under the key *name* (``from_json`` of :func:`config_table`): the key names
    the topic, as in 4.9.3's topicConfigTable map, whatever topicName says.  An entry copied by hand to make
    another topic (its topicName left as the original's) replaced the original's config with the copy's and
    the new topic was missing; the key also names it when topicName is missing or null."""
    config = TopicConfig.from_json(raw, name)
    return config if not name or config.topic_name == name else config.replace(topic_name=name)


def _object_table(obj: dict[str, Any], table_key: str) -> dict[Any, Any]:
    """*obj*'s *table_key*, which must be a JSON object (ProtocolError: a config file of the wrong shape)."""
    table = obj[table_key]
    if not isinstance(table, dict):
        raise ProtocolError(f"{table_key} is no JSON object but {type(table).__name__}")
    return table


def offset_table_of(obj: dict[str, Any]) -> dict[Any, Any] | None:
    """The raw ``offsetTable`` of a consumerOffset.json / delayOffset.json object (None when it has none);
    ProtocolError when it is no object, so that :func:`read_json_file` takes the ``.bak``."""
    if "offsetTable" not in obj:
        return None
    return _object_table(obj, "offsetTable")


def _checked_offset_table(obj: dict[str, Any]) -> dict[Any, Any] | None:
    """consumerOffset.json's raw offsetTable: :func:`offset_table_of`, and each ``topic@group`` entry an
    object (4.9.3 cannot decode a file with a ``"T@g":5`` either)."""
    table = offset_table_of(obj)
    for key, queues in (table or {}).items():
        if not isinstance(queues, dict):
            raise ProtocolError(f"offsetTable entry {str(key)!r:.80} is no JSON object")
    return table


def parse_offset_table(table: dict[Any, Any]) -> dict[str, dict[int, int]]:
    """An offsetTable as consumerOffset.json and GET_ALL_CONSUMER_OFFSET hold it (``topic@group`` ->
    queue id -> offset), entries that are not numbers left out."""
    parsed: dict[str, dict[int, int]] = {}
    for key, queues in table.items():
        if not isinstance(queues, dict) or TOPIC_GROUP_SEPARATOR not in str(key):
            continue
        entries: dict[int, int] = {}
        for queue_id, offset in queues.items():
            try:
                entries[int(queue_id)] = int(offset)
            except (TypeError, ValueError, OverflowError):  # (OverflowError: an infinite float, 1e400)
                continue
        parsed[str(key)] = entries
    return parsed


def read_offset_table(path: str) -> dict[str, dict[int, int]] | None:
    """consumerOffset.json's offsetTable (see :func:`read_json_file` for the ``.bak`` and CorruptFileError);
    None when neither file holds one (missing, empty, ``null``, no offsetTable), as 4.9.3's
    ConsumerOffsetManager.decode then keeps the table it has; an offsetTable (or an entry of it) that is no
    object is unreadable, so the ``.bak`` is read."""
    table = read_json_file(path, _checked_offset_table)
    return parse_offset_table(table) if table is not None else None
