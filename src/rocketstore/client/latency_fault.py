"""A producer's send latency fault tolerance (4.9.3's ``sendLatencyFaultEnable``: its MQFaultStrategy and
LatencyFaultToleranceImpl): each plain send's latency is kept per broker, and a broker whose last send was
slow or failed is "not available" for a while, during which plain sends go to the queues of other brokers.

How long a broker is left out follows from the last send's latency: the last step of *latency_max* (ms) it
reached gives the time of *not_available_duration* (ms) at the same place (by default 550 ms or more: 30 s,
1 s: 60 s, 2 s: 120 s, 3 s: 180 s, 15 s: 600 s; below 550 ms: none).  A failed send (a connection error, a
time-out, any error answer, a broker without a master) counts as 30 000 ms, so it leaves its broker out for
600 s by default; its own latency is still what is kept of it.  A later send that goes well makes the broker
available again at once (when fast), as in 4.9.3, where every send's outcome overwrites the broker's last one.

Choosing a queue (:meth:`LatencyFaultTolerance.select`), as MQFaultStrategy.selectOneMessageQueue does with
the option on: the round-robin moves one step per send and the queues from there on are tried in turn for
one of an available broker.  When every broker of the topic is left out, the least bad of the brokers this
producer has kept (the available ones first, then the lower latency, then the earlier end of the time left
out; one of the better half, in turn) gets the send, on a queue id below its write queue count, in turn;
a broker the topic has no queue data for is forgotten instead and the round-robin's queue taken.  The
retry of a failed send is chosen the same way (4.9.3 does not pass over the failed broker by name with the
option on: its time left out does).

Unlike 4.9.3, choosing the least bad broker does not change the producer's list of publish queues: Java's
selectOneMessageQueue sets the broker name and queue id of the round-robin's MessageQueue object itself, so
that entry of the TopicPublishInfo stays another broker's queue until the route changes; here a new
MessageQueue is returned.  Times are this module's clock's (``time.monotonic`` in ms unless given), not the
wall clock's.

Pure and loop-free: the :class:`~rocketstore.client.producer.Producer` owns one per producer (shared by its
topics, as 4.9.3's is per producer) and calls it only when the option is on.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator, Sequence

from rocketstore.client.route import MessageQueue
from rocketstore.remoting.bodies import TopicRouteData

__all__ = ["DEFAULT_LATENCY_MAX", "DEFAULT_NOT_AVAILABLE_DURATION", "ISOLATION_LATENCY_MS",
           "LatencyFaultTolerance"]

#: MQFaultStrategy's latencyMax (ms), the steps of a send's latency
DEFAULT_LATENCY_MAX: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
#: MQFaultStrategy's notAvailableDuration (ms): how long a broker is left out after a send of each step
DEFAULT_NOT_AVAILABLE_DURATION: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: the latency (ms) a failed send counts as when working out how long its broker is left out
ISOLATION_LATENCY_MS = 30000


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class LatencyFaultTolerance:
    """The brokers' last send latencies and times left out (see the module's docstring); *clock*: the
    current time in ms (for tests; default monotonic)."""

    def __init__(self, latency_max: Sequence[int] = DEFAULT_LATENCY_MAX,
                 not_available_duration: Sequence[int] = DEFAULT_NOT_AVAILABLE_DURATION, *,
                 clock: Callable[[], int] = _monotonic_ms) -> None:
        self.latency_max = latency_max
        self.not_available_duration = not_available_duration
        self.clock = clock
        #: broker name -> [last latency ms, available again from (clock ms)]
        self._items: dict[str, list[int]] = {}
        #: which of the better half pick_one_at_least takes (4.9.3's whichItemWorst, from a random start)
        self._worst: Iterator[int] = itertools.count(random.randrange(1 << 16))

    @property
    def latency_max(self) -> tuple[int, ...]:
        """The steps of a send's latency (ms, ascending; Java's setLatencyMax)."""
        return self._latency_max

    @latency_max.setter
    def latency_max(self, value: Sequence[int]) -> None:
        self._latency_max = tuple(int(v) for v in value)

    @property
    def not_available_duration(self) -> tuple[int, ...]:
        """How long (ms) a broker is left out after a send of each :attr:`latency_max` step (Java's
        setNotAvailableDuration); as long as *latency_max*, or a step past its end counts as none."""
        return self._not_available_duration

    @not_available_duration.setter
    def not_available_duration(self, value: Sequence[int]) -> None:
        self._not_available_duration = tuple(int(v) for v in value)

    def not_available_ms(self, latency_ms: int) -> int:
        """How long a broker is left out after a send of *latency_ms*: the duration of the last
        :attr:`latency_max` step it reached, none below the first."""
        steps = self._latency_max
        for i in range(len(steps) - 1, -1, -1):
            if latency_ms >= steps[i]:
                durations = self._not_available_duration
                # (a step past the durations' end: none, where 4.9.3 would fail with an index error)
                return durations[i] if i < len(durations) else 0
        return 0

    def update(self, broker_name: str, latency_ms: int, isolation: bool) -> None:
        """Keep a send to *broker_name* that took *latency_ms*; *isolation*: it failed (counted as
        :data:`ISOLATION_LATENCY_MS` for the time left out)."""
        left_out = self.not_available_ms(ISOLATION_LATENCY_MS if isolation else latency_ms)
        self._items[broker_name] = [latency_ms, self.clock() + left_out]

    def is_available(self, broker_name: str) -> bool:
        """Whether sends may go to *broker_name* (a broker never sent to is)."""
        item = self._items.get(broker_name)
        return item is None or self.clock() >= item[1]

    def remove(self, broker_name: str | None) -> None:
        self._items.pop(broker_name, None)  # type: ignore[arg-type]

    def pick_one_at_least(self) -> str | None:
        """The least bad broker kept: the kept ones ordered available first, then by latency, then by the end
        of their time left out (ties in random order), and one of the better half taken in turn (the best
        of one); None when none is kept."""
        if not self._items:
            return None
        now = self.clock()
        names = list(self._items)
        random.shuffle(names)
        items = self._items
        names.sort(key=lambda n: (now < items[n][1], items[n][0], items[n][1]))
        half = len(names) // 2
        return names[0] if half <= 0 else names[next(self._worst) % half]

    def select(self, queues: list[MessageQueue], route: TopicRouteData, counter: Iterator[int]
               ) -> MessageQueue:
        """The queue of *queues* (a topic's publish queues under *route*, not empty) a plain send (or its
        retry) goes to, *counter* being the producer's round-robin (see the module's docstring)."""
        size = len(queues)
        index = next(counter)
        for i in range(size):
            mq = queues[(index + i) % size]
            if self.is_available(mq.broker_name):
                return mq
        name = self.pick_one_at_least()
        write_queue_nums = -1
        for qd in route.queue_datas:
            if qd.broker_name == name:
                write_queue_nums = qd.write_queue_nums
                break
        if write_queue_nums > 0:
            mq = queues[next(counter) % size]
            return MessageQueue(mq.topic, name, next(counter) % write_queue_nums)  # type: ignore[arg-type]
        self.remove(name)
        return queues[next(counter) % size]
