"""UNIQ_KEYs made in a forked child: a part of the child's own (its pid, a new random word), not the parent's.

MessageClientIDSetter's layout: IP (4 bytes), pid as Java's ``(short) pid`` (2), a per-process word (4), ms
since the month's start (4), counter (2).  A forked child keeps the parent's module state, counter included,
so without a part of its own it makes the very keys the parent makes in the same millisecond.
"""

from __future__ import annotations

import os

import pytest

from rocketstore.client.outgoing_message import new_uniq_key, new_uniq_keys

#: hex digits of IP + pid + word: the part every key of one process shares
FIX_CHARS = (4 + 2 + 4) * 2
PID_FIELD = slice(8, 12)


def _keys_of_forked_child() -> list[str]:
    """A key and a batch's keys made in a forked child, sent back through a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write and leave at once, no pytest teardown in it
        try:
            os.write(write_end, f"{new_uniq_key()},{new_uniq_keys(3)}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            text = pipe.read().decode()
    finally:
        os.waitpid(pid, 0)
    return text.split(",")


def test_forked_child_keys_have_a_fixed_part_of_their_own() -> None:
    parent_fix = new_uniq_key()[:FIX_CHARS]
    child_keys = _keys_of_forked_child()
    assert len(child_keys) == 4
    assert {key[:FIX_CHARS] for key in child_keys} != {parent_fix}
    assert len({key[:FIX_CHARS] for key in child_keys}) == 1  # one process, one fixed part
    assert new_uniq_key()[:FIX_CHARS] == parent_fix  # the parent's own part is left as it was


def test_pid_field_is_the_low_16_bits_as_java_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # the child's fixed part is made after the fork, with the pid it then reads: one above 32767 keeps its
    # 16th bit, as Java's putShort((short) pid) and getPidFromID (value & 0xFFFF) have it
    monkeypatch.setattr(os, "getpid", lambda: 0x19C40)
    child_keys = _keys_of_forked_child()
    assert {key[PID_FIELD] for key in child_keys} == {"9C40"}
