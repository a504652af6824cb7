"""The flush thread's first round of each kind is thorough, so the checkpoint is written a second after
the store starts.  4.9.3's commitlog and consume-queue flush services count from a last thorough flush at 0
(seen against the real 4.9.3 broker killed with -9 a few seconds after its start: its store held a
checkpoint; ours had none until the first minute was up, so every crash in that minute recovered from the
first segment, or from the checkpoint an older run left)."""

from __future__ import annotations

import threading

from rocketstore.store.flush import AsyncFlusher


def test_the_first_commitlog_and_queue_rounds_are_thorough() -> None:
    commit_log: list[bool] = []
    queues: list[bool] = []
    seen = threading.Event()

    def queues_step(thorough: bool) -> None:
        queues.append(thorough)
        if len(queues) >= 2:
            seen.set()

    flusher = AsyncFlusher(interval_s=0.001, commit_log_step=commit_log.append, queues_step=queues_step,
                           thorough_commit_log_s=3600.0, queues_interval_s=0.0, thorough_queues_s=3600.0,
                           on_failure=lambda exc: None)
    flusher.start()
    try:
        assert seen.wait(30)  # hang guard
    finally:
        flusher.stop()
    # the first round thorough, the next ones (within the hour) not
    assert commit_log[:2] == [True, False]
    assert queues[:2] == [True, False]
