"""put_batch stores a lone surrogate in properties as put does: '?' for it, as 4.9.3's getBytes(UTF_8).
ee7ba3d taught put (the single-message path, which inlines drafting.draft_or_status) to do so; put_batch
drafts through draft_or_status itself and still refused such a message MESSAGE_ILLEGAL."""

from __future__ import annotations

from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, store_host="10.0.0.1:10911")


def test_put_and_put_batch_store_a_lone_surrogate_alike(tmp_path: Path) -> None:
    props = {"k\udc00": "a\ud800b", "k2": "\U0001f600"}
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        one = store.put(Message("Surrogates", b"x", dict(props), queue_id=0))
        batch = store.put_batch([Message("Surrogates", b"x", dict(props), queue_id=1)])
        assert one.status == PutMessageStatus.PUT_OK
        assert batch.status == PutMessageStatus.PUT_OK
        assert store.wait_dispatched()
        [single] = store.get("Surrogates", 0, 0, 10).messages
        [batched] = store.get("Surrogates", 1, 0, 10).messages
    assert single.properties_string == batched.properties_string
    assert "k?" in single.properties_string and "a?b" in single.properties_string
