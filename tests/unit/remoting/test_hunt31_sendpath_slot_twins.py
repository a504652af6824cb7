"""The per-frame command and the per-send result are built as a same-slots twin whose ``__class__`` is then
set (remoting.command.new_command, client.outgoing_message._new_send_result): what comes out must be an
ordinary frozen instance, equal to (and hashing as) the dataclass constructor's."""

from __future__ import annotations

import dataclasses

import pytest

from rocketstore.client import MessageQueue
from rocketstore.client.outgoing_message import SendResult, _new_send_result
from rocketstore.remoting.codes import LanguageCode, SerializeType
from rocketstore.remoting.command import RemotingCommand, new_command


def test_new_command_is_an_ordinary_frozen_command() -> None:
    args = (310, LanguageCode.CPP, 399, 7, 2, "r", {"a": "b"}, b"body", SerializeType.ROCKETMQ)
    built = new_command(*args)
    expected = RemotingCommand(*args)
    assert type(built) is RemotingCommand
    assert built == expected and hash(built) == hash(expected) and repr(built) == repr(expected)
    assert dataclasses.astuple(built) == dataclasses.astuple(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.opaque = 8  # type: ignore[misc]
    assert dataclasses.replace(built, opaque=8).opaque == 8


def test_new_send_result_is_an_ordinary_frozen_result() -> None:
    args = ("SEND_OK", "AB", "CD", MessageQueue("T", "b", 1), 5, "DefaultRegion", False)
    built = _new_send_result(*args)
    expected = SendResult(*args)
    assert type(built) is SendResult
    assert built == expected and hash(built) == hash(expected) and repr(built) == repr(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.status = "x"  # type: ignore[misc]
