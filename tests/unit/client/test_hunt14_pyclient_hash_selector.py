"""hash_queue_selector picks the queue Java's SelectMessageQueueByHash picks for the same key:
``abs(arg.hashCode() % size)``, with String.hashCode for text, Integer.hashCode (the value) for an int that
fits 32 bits, and Long.hashCode (``(int) (v ^ (v >>> 32))``) for one that only fits 64 bits, as a Java
producer's ``long`` order id hashes; a Java and a Python producer then send one key's messages to one
queue, which orderly consumption relies on."""

from __future__ import annotations

import pytest

from rocketstore.client import MessageQueue, hash_queue_selector

QUEUES = [MessageQueue("T", "broker-a", i) for i in range(4)]


@pytest.mark.parametrize(("key", "queue_id"), [
    ("hello", 2),                  # "hello".hashCode() == 99162322
    ("polygenelubricants", 0),     # its hashCode() is Integer.MIN_VALUE
    (7, 3),
    (-7, 3),                       # Java: -7 % 4 == -3, abs 3
    (5_000_000_000, 1),            # Long.hashCode: (int) (5000000000 ^ 1) == 705032705
    (-5_000_000_000, 2),           # Long.hashCode: 705032702
    (2**31 + 1, 3),                # Long.hashCode: (int) 0x80000001 == -2147483647; % 4 == -3
])
def test_the_queue_is_the_one_java_picks(key: object, queue_id: int) -> None:
    assert hash_queue_selector(QUEUES, key).queue_id == queue_id
