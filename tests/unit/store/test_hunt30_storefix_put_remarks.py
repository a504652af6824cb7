"""A refused put says why in its remark, also when a property cannot be encoded (an int value, the usual
mistake of a library user: {"retries": 3}), a name is no str, a timestamp is a float (time.time() * 1000),
or a delay's REAL_TOPIC / REAL_QID make the properties too long; and put_batch says why as put does.  These
came back MESSAGE_ILLEGAL / PROPERTIES_SIZE_EXCEEDED with an empty remark.  The status is unchanged (a broker
answers a send with 4.9.3's fixed remark for the status, code 13 MESSAGE_ILLEGAL for both: never this text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, PutMessageStatus, StoreConfig

CONFIG = StoreConfig(mapped_file_size_commit_log=8 << 20)
ILLEGAL = PutMessageStatus.MESSAGE_ILLEGAL

CASES = [
    ("an int value", Message("T", b"x", {"retries": 1}), ILLEGAL, ["'retries'", "int"]),  # type: ignore[dict-item]
    ("a bytes value", Message("T", b"x", {"k": b"v"}), ILLEGAL, ["'k'", "bytes"]),  # type: ignore[dict-item]
    ("an int name", Message("T", b"x", {7: "v"}), ILLEGAL, ["7", "int"]),  # type: ignore[dict-item]
    ("pairs, no mapping", Message("T", b"x", [("k", "v")]), ILLEGAL, ["list"]),  # type: ignore[arg-type]
    ("a float born timestamp", Message("T", b"x", born_timestamp=1.5), ILLEGAL,  # type: ignore[arg-type]
     ["born_timestamp", "float"]),
    ("a float store timestamp", Message("T", b"x", store_timestamp=1.5), ILLEGAL,  # type: ignore[arg-type]
     ["store_timestamp", "float"]),
]


@pytest.mark.parametrize(("message", "status", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_put_and_put_batch_say_why_they_refuse(tmp_path: Path, message: Message, status: PutMessageStatus,
                                               words: list[str]) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        for refused in (store.put(message), store.put_batch([message, message])):
            assert refused.status is status
            for word in words:
                assert word in refused.remark, (word, refused.remark)
        assert store.max_offset("T", 0) == 0


def test_a_delayed_put_its_delay_makes_too_long_says_so(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        # fits as sent (4.9.3's check), too long once REAL_TOPIC and REAL_QID are added
        refused = store.put(Message("T", b"x", {"DELAY": "1", "p": "v" * 32740}))
        assert refused.status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
        assert "32767" in refused.remark and "REAL_TOPIC" in refused.remark


def test_put_batch_says_why_as_put_does(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        for message in (Message("T" * 128, b"x"), Message("T T", b"x"), Message("T", b"x", {"p": "v" * 32770}),
                        Message("T", b"x", {"p": "\u00e9" * 20000}), Message("T", b"x", queue_id=-1),
                        Message("T", b"x" * (4 << 20))):
            single = store.put(message)
            batch = store.put_batch([message, message])
            assert (batch.status, batch.remark) == (single.status, single.remark)
            assert batch.remark
