"""allocate_averagely against AllocateMessageQueueAveragely's arithmetic, worked by hand and by property."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketstore.client.allocate import allocate_averagely


def test_eight_queues_over_three_clients_give_three_three_two_in_order() -> None:
    queues = list(range(8))
    ids = ["a", "b", "c"]
    assert [allocate_averagely(c, queues, ids) for c in ids] == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_more_clients_than_queues_leaves_the_last_ones_idle() -> None:
    queues = ["q0", "q1"]
    ids = ["a", "b", "c", "d"]
    assert [allocate_averagely(c, queues, ids) for c in ids] == [["q0"], ["q1"], [], []]


def test_a_client_not_in_the_list_owns_nothing() -> None:
    assert allocate_averagely("x", [1, 2, 3], ["a", "b"]) == []


@given(st.integers(1, 64), st.integers(1, 20))
def test_shares_are_disjoint_contiguous_cover_everything_and_differ_by_at_most_one(n_queues: int,
                                                                                     n_clients: int) -> None:
    queues = list(range(n_queues))
    ids = [f"c{i:02d}" for i in range(n_clients)]
    shares = [allocate_averagely(c, queues, ids) for c in ids]
    assert [q for share in shares for q in share] == queues  # in client order, contiguous, no overlap
    sizes = [len(s) for s in shares]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
