"""The public annotations a type checker reads (the package ships py.typed) admit what the calls take:
``mypy --strict`` refused a user's ``Message.create(topic, bytearray(...))`` and ``memoryview`` bodies (the
docstring and the TypeError name both as accepted), ``get(..., tags={code, ...})`` with a set of tag codes
(taken at run time as a frozenset is), and ``StoreConfig.from_properties`` of a Mapping that is not a dict
(a ``configparser`` section, ``types.MappingProxyType``)."""

from __future__ import annotations

import configparser
import inspect
from pathlib import Path

from rocketstore import GetMessageStatus, Message, MessageStore, StoreConfig
from rocketstore.message import tags_code


def _annotation(function: object, name: str) -> str:
    return str(inspect.signature(function).parameters[name].annotation)  # type: ignore[arg-type]


def test_the_annotations_admit_what_the_calls_take() -> None:
    body = _annotation(Message.create, "body")
    assert "bytearray" in body and "memoryview" in body
    assert "set[int]" in _annotation(MessageStore.get, "tags").replace("frozenset[int]", "")
    assert "Mapping[str, str]" in _annotation(StoreConfig.from_properties, "props")


def test_the_calls_take_them(tmp_path: Path) -> None:
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]  (keep broker.conf's camelCase names)
    parser.read_string("[broker]\nmappedFileSizeCommitLog=1048576\n")
    config = StoreConfig.from_properties(parser["broker"])
    assert config.mapped_file_size_commit_log == 1 << 20
    with MessageStore.open(tmp_path / "s", config) as store:
        store.put(Message.create("T", bytearray(b"one"), tags="a"))
        store.put(Message.create("T", memoryview(b"two"), tags="b"))
        store.wait_dispatched()
        got = store.get("T", 0, 0, tags={tags_code("b")})
        assert got.status is GetMessageStatus.FOUND and [m.body for m in got.messages] == [b"two"]
