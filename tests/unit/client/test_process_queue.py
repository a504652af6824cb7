"""ProcessQueue: the committable offset is the smallest message still held, orderly batches commit past
themselves, and put-back messages come first again."""

from __future__ import annotations

from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_types import ConsumedMessage
from rocketstore.client.route import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def msg(offset: int, body: bytes = b"x") -> ConsumedMessage:
    return ConsumedMessage("T", 0, offset, body, f"id{offset}", f"off{offset}", 0, offset * 100, 0, 0, 0,
                           "broker-a", "T", {})


def test_offset_to_commit_is_the_smallest_message_still_in_flight() -> None:
    pq = ProcessQueue(MQ)
    assert pq.remove([msg(0)]) == -1, "nothing held: nothing to commit"
    pq.put([msg(i) for i in range(5, 10)])
    assert pq.count == 5 and pq.max_span == 4 and pq.body_bytes == 5
    assert pq.remove([msg(7), msg(8)]) == 5, "5 is still being handled"
    assert pq.remove([msg(5)]) == 6
    assert pq.remove([msg(6), msg(9)]) == 10, "all done: one past the largest"
    assert pq.count == 0 and pq.body_bytes == 0


def test_a_repulled_offset_is_not_held_twice() -> None:
    pq = ProcessQueue(MQ)
    assert len(pq.put([msg(1), msg(2)])) == 2
    assert [m.queue_offset for m in pq.put([msg(2), msg(3)])] == [3]
    assert pq.count == 3


def test_orderly_take_commit_and_put_back() -> None:
    pq = ProcessQueue(MQ)
    pq.put([msg(i) for i in range(4)])
    batch = pq.take(2)
    assert [m.queue_offset for m in batch] == [0, 1] and pq.count == 4
    pq.put_back([m.with_reconsume_times(1) for m in batch])
    again = pq.take(2)
    assert [(m.queue_offset, m.reconsume_times) for m in again] == [(0, 1), (1, 1)]
    assert pq.commit() == 2 and pq.count == 2
    assert pq.commit() == -1


def test_orderly_commit_never_moves_past_a_message_put_back_below_the_batch() -> None:
    pq = ProcessQueue(MQ)
    pq.put([msg(i) for i in range(3)])
    batch = pq.take(3)
    pq.put_back([batch[0]])  # 1 and 2 went to the DLQ and stay in the consuming set
    assert [m.queue_offset for m in pq.take(1)] == [0]
    pq.put([msg(3)])
    assert pq.commit() == 3


def test_an_orderly_batch_commits_past_the_skipped_offsets_after_it() -> None:
    """A pull of [10 good, 11 undecodable, 12 undecodable]: the batch of 10 done commits 13 (it committed 11,
    and a restart then pulled and skipped 11 and 12 again); with 13 held, 13 (the offsets between are done)."""
    pq = ProcessQueue(MQ)
    pq.put([msg(10)])
    pq.passed(12)
    assert [m.queue_offset for m in pq.take(32)] == [10]
    assert pq.commit() == 13
    pq.put([msg(15)])
    pq.passed(14)  # (a pull of [14 bad, 15 good]: put first, then the skip)
    pq.put([msg(16)])
    assert [m.queue_offset for m in pq.take(1)] == [15]
    assert pq.commit() == 16, "16 is still held"
