"""wait_dispatched backs off while the dispatcher cannot write.

It retried dispatch every 0.5 ms until its timeout (10 s by default) while the dispatcher kept failing (out
of descriptors, a full disk): a busy CPU for nothing, where the dispatch thread waits 0.5 s between tries.
Here a queue's directory cannot be made (a file holds its name), which fails every dispatch try the same way
as EMFILE; the dispatch tries a one-second wait makes are counted."""

from __future__ import annotations

from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig


def _config() -> StoreConfig:
    return StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64,
                       max_hash_slot_num=8, max_index_num=64, preallocate_commit_log=False)


def test_a_wait_on_a_failing_dispatcher_backs_off_and_recovers(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with MessageStore.open(root, _config(), background=False) as store:
        assert store.put(Message.create("Wait", b"first", queue_id=0)).ok
        assert store.wait_dispatched()
        blocker = root / "consumequeue" / "Wait" / "1"
        blocker.write_bytes(b"")  # queue 1's directory cannot be made: every dispatch try fails
        assert store.put(Message.create("Wait", b"second", queue_id=1)).ok

        dispatcher = store._dispatcher
        real = dispatcher.dispatch_available
        tries = 0

        def counting(bound: int | None = None) -> int:
            nonlocal tries
            tries += 1
            return real(bound)

        dispatcher.dispatch_available = counting  # type: ignore[method-assign]
        try:
            assert store.wait_dispatched(timeout_s=1.0) is False
            assert dispatcher.io_error is not None
            failing_tries = tries
            # a 0.5 ms poll makes about two thousand tries in a second; backing off toward the dispatch
            # thread's 0.5 s pause makes about a dozen
            assert failing_tries <= 50, failing_tries

            blocker.unlink()  # the dispatcher can write again: the next wait catches up at once
            assert store.wait_dispatched()
        finally:
            dispatcher.dispatch_available = real  # type: ignore[method-assign]
        assert dispatcher.io_error is None
        assert store.get("Wait", 1, 0, 1).messages[0].body == b"second"
