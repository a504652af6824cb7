"""The producer's ``send_latency_fault_enable`` (4.9.3's DefaultMQProducer.setSendLatencyFaultEnable, with
its MQFaultStrategy and LatencyFaultToleranceImpl): with it on, a broker whose send failed is left out of
plain sends for 600 s (a failure counts as 30 000 ms of latency: the last latencyMax step), one whose send
was slow for its step's time (550 ms: 30 s); off (the default), every send beginning on a failing broker
tries it again first, as before.  The time is the test's clock, never the wall clock."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from rocketstore.client.blocking_producer import BlockingProducer
from rocketstore.client.latency_fault import LatencyFaultTolerance
from rocketstore.client.producer import Producer
from rocketstore.client.request_producer import RequestProducer
from rocketstore.client.transaction_producer import TransactionProducer
from rocketstore.client.route import MessageQueue
from rocketstore.errors import RemotingError
from rocketstore.remoting.bodies import TopicRouteData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection

TOPIC = "Hunt25FaultLat"


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 20)
    return asyncio.run(bounded())


async def _sends(two_masters: Any, broker_a_mode: str, *, enable: bool, rounds: list[tuple[int, int]],
                 latency_max: tuple[int, ...] | None = None) -> tuple[list[list[str]], int]:
    """Sends to TOPIC with broker-a *broker_a_mode* ("stopped": nothing listens on its address; "error":
    it answers SYSTEM_ERROR; "slow": it answers after 600 ms of the test's clock), broker-b answering,
    the round-robin from broker-a's queue 0.  *rounds*: (ms the clock moves first, sends).  The results'
    queues per round and the send requests broker-a got."""
    now = [1_000_000]
    tries_on_a = [0]

    async def broker_a(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code != RequestCode.SEND_MESSAGE_V2:
            return request.make_response(ResponseCode.SUCCESS)
        tries_on_a[0] += 1
        if broker_a_mode == "error":
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark="failing")
        now[0] += 600  # "slow": the send took 600 ms
        return two_masters.send_answer(request)

    outcomes: list[list[str]] = []
    async with two_masters.serve(TOPIC, broker_a, broker_a_stopped=broker_a_mode == "stopped") as addrs:
        async with Producer(addrs.namesrv, "hunt25-faultlat", retry_times=2, timeout_s=5,
                            send_latency_fault_enable=enable) as producer:
            producer.latency_fault.clock = lambda: now[0]
            if latency_max is not None:
                producer.latency_max = latency_max
            await producer.fetch_publish_message_queues(TOPIC)
            producer._next_queue = itertools.count(0)  # broker-a's queue 0 first
            for moved_ms, count in rounds:
                now[0] += moved_ms
                got = []
                for _ in range(count):
                    result = await producer.send(TOPIC, b"x")
                    got.append(f"{result.message_queue.broker_name[-1]}{result.message_queue.queue_id}")
                outcomes.append(got)
    return outcomes, tries_on_a[0]


def test_on_a_stopped_broker_is_left_out_for_600_s_after_its_failed_send(two_masters: Any) -> None:
    outcomes, _ = _run(_sends(two_masters, "stopped", enable=True, rounds=[(0, 8), (599_999, 8), (1, 2)]))
    # the first send fails on a0 and goes on to b0 (a's queues 1..3 passed over: a is left out); the
    # round-robin moves one step a send, and while it is on a's queues the first of b's takes the send
    assert outcomes[0] == ["b0", "b0", "b0", "b0", "b1", "b2", "b3", "b0"]
    # 1 ms before the 600 s end, a is still left out (the round-robin at a0 for the last send)
    assert outcomes[1] == ["b0", "b0", "b0", "b0", "b1", "b2", "b3", "b0"]
    # 600 s on: a is tried again (the round-robin at a1), fails, and is left out again: the send and the
    # next go to b0
    assert outcomes[2] == ["b0", "b0"]


def test_off_a_failing_broker_is_tried_first_by_every_send_beginning_on_it(two_masters: Any) -> None:
    # 4.9.3 with sendLatencyFaultEnable false: a send beginning on broker-a fails there and its retry steps
    # past a's queues (selectOneMessageQueue(lastBrokerName)), so one send in four tries broker-a
    outcomes, tries = _run(_sends(two_masters, "error", enable=False, rounds=[(0, 12)]))
    assert outcomes == [["b0", "b1", "b2", "b3"] * 3]
    assert tries == 3
    outcomes, tries = _run(_sends(two_masters, "error", enable=True, rounds=[(0, 12)]))
    assert tries == 1  # left out after its one failed send
    assert outcomes == [["b0", "b0", "b0", "b0", "b1", "b2", "b3", "b0", "b0", "b0", "b0", "b0"]]


def test_on_a_slow_send_leaves_its_broker_out_for_its_steps_time(two_masters: Any) -> None:
    # 600 ms reaches latencyMax's 550 ms step: 30 s left out from the slow send's end (its send went well
    # and is not retried); the round-robin back on a's queues passes over them until then
    outcomes, tries = _run(_sends(two_masters, "slow", enable=True, rounds=[(0, 8), (29_999, 1), (1, 1)]))
    assert outcomes == [["a0", "b0", "b0", "b0", "b0", "b1", "b2", "b3"], ["b0"], ["a1"]]
    assert tries == 2
    # with a step of 700 ms instead of 550 ms (setLatencyMax) the same send is not slow: a's queues in turn
    outcomes, tries = _run(_sends(two_masters, "slow", enable=True, rounds=[(0, 5)],
                                  latency_max=(50, 100, 700, 1000, 2000, 3000, 15000)))
    assert outcomes == [["a0", "a1", "a2", "a3", "b0"]]
    assert tries == 4


def test_a_slow_brokers_time_left_out_ends_on_the_clock() -> None:
    fault = LatencyFaultTolerance(clock=lambda: now[0])
    now = [0]
    fault.update("broker-a", 600, False)
    assert not fault.is_available("broker-a") and fault.is_available("broker-b")
    now[0] = 29_999
    assert not fault.is_available("broker-a")
    now[0] = 30_000
    assert fault.is_available("broker-a")


def test_how_long_a_latency_leaves_a_broker_out() -> None:
    fault = LatencyFaultTolerance()
    # 4.9.3's latencyMax {50, 100, 550, 1000, 2000, 3000, 15000} -> notAvailableDuration
    # {0, 0, 30000, 60000, 120000, 180000, 600000}: the last step reached
    assert [fault.not_available_ms(ms) for ms in (0, 49, 50, 549, 550, 999, 1000, 2000, 2999, 3000,
                                                  14999, 15000, 30000)] == \
        [0, 0, 0, 0, 30000, 30000, 60000, 120000, 120000, 180000, 180000, 600000, 600000]
    now = [0]
    fault.clock = lambda: now[0]
    fault.update("broker-a", 3, True)  # a failure: counted as 30 000 ms, 3 ms kept
    now[0] = 599_999
    assert not fault.is_available("broker-a")
    now[0] = 600_000
    assert fault.is_available("broker-a")


def test_with_every_broker_left_out_the_least_bad_takes_the_send_on_a_queue_of_its_own(two_masters: Any) -> None:
    now = [0]
    fault = LatencyFaultTolerance(clock=lambda: now[0])
    route = TopicRouteData.decode((two_masters.route_4_9_3 % {"a": "127.0.0.1:1", "b": "127.0.0.1:2"}).encode())
    queues = [MessageQueue(TOPIC, b, i) for b in ("broker-a", "broker-b") for i in range(4)]
    fault.update("broker-a", 20_000, False)  # 600 s out
    fault.update("broker-b", 700, False)  # 30 s out
    # two kept: the better half is broker-b (lower latency), on a queue id below its 4 write queues from
    # the round-robin (one step for the queues scanned, one for the queue taken over, one for the id)
    counter = itertools.count(5)
    assert fault.select(queues, route, counter) == MessageQueue(TOPIC, "broker-b", 7 % 4)
    assert next(counter) == 8
    assert queues == [MessageQueue(TOPIC, b, i) for b in ("broker-a", "broker-b") for i in range(4)]
    # an available broker kept goes before the ones left out (pick_one_at_least)
    fault.update("broker-c", 10, False)
    fault.update("broker-d", 10, False)
    assert fault.pick_one_at_least() in ("broker-c", "broker-d")
    # a least bad broker the topic has no queues on is forgotten, and the round-robin's queue taken
    only_c = LatencyFaultTolerance(clock=lambda: now[0])
    only_c.update("broker-c", 0, True)
    only_a = [MessageQueue(TOPIC, "broker-c", 0)]
    assert only_c.select(only_a, route, itertools.count(0)) == only_a[0]
    assert only_c.is_available("broker-c") and only_c.pick_one_at_least() is None


def test_the_option_and_its_steps_are_the_producers_settings() -> None:
    producer = Producer("127.0.0.1:1", "hunt25-faultlat")
    assert producer.send_latency_fault_enable is False and producer._fault is None
    assert producer.latency_max == (50, 100, 550, 1000, 2000, 3000, 15000)
    assert producer.not_available_duration == (0, 0, 30000, 60000, 120000, 180000, 600000)
    producer.send_latency_fault_enable = True
    producer.latency_max = [10, 20]
    producer.not_available_duration = [5, 6]
    assert producer._fault is producer.latency_fault and producer.latency_fault.not_available_ms(25) == 6
    on = Producer("127.0.0.1:1", "hunt25-faultlat", send_latency_fault_enable=True, latency_max=[1],
                  not_available_duration=[2])
    assert on.send_latency_fault_enable and on.latency_max == (1,) and on.not_available_duration == (2,)
    # passed on by the producers built on the Producer and the blocking wrapper
    requester = RequestProducer("127.0.0.1:1", "hunt25-faultlat", send_latency_fault_enable=True,
                                latency_max=[3], not_available_duration=[4])
    assert requester.send_latency_fault_enable and requester.not_available_duration == (4,)
    # TransactionMQProducer's half messages go through sendDefaultImpl, its fault strategy included
    transactional = TransactionProducer("127.0.0.1:1", "hunt25-faultlat-tx", lambda message: None,
                                        send_latency_fault_enable=True, latency_max=[5], not_available_duration=[6])
    assert transactional._sender.send_latency_fault_enable and transactional._sender.latency_max == (5,)
    blocking = BlockingProducer("127.0.0.1:1", "hunt25-faultlat", send_latency_fault_enable=True)
    try:
        assert blocking.producer.send_latency_fault_enable
    finally:
        blocking.shutdown()


def test_oneway_sends_count_and_sends_to_a_chosen_queue_do_not(two_masters: Any) -> None:
    async def go(enable: bool) -> tuple[list[str], bool]:
        outcomes = []
        async with two_masters.serve(TOPIC, broker_a_stopped=True) as addrs:
            async with Producer(addrs.namesrv, "hunt25-faultlat", timeout_s=5,
                                send_latency_fault_enable=enable) as producer:
                producer.latency_fault.clock = lambda: 0
                # a send to a chosen queue (Java's send(msg, mq): sendKernelImpl) keeps nothing
                try:
                    await producer.send(TOPIC, b"x", message_queue=MessageQueue(TOPIC, "broker-a", 0))
                except RemotingError:
                    pass
                chosen_kept = not producer.latency_fault.is_available("broker-a")
                producer._next_queue = itertools.count(0)
                for _ in range(4):  # the round-robin over broker-a's 4 queues
                    try:
                        await producer.send_oneway(TOPIC, b"x")
                        outcomes.append("ok")
                    except RemotingError:
                        outcomes.append("failed")
        return outcomes, chosen_kept

    # on: the failed oneway send leaves broker-a out, the next ones go to broker-b's queue 0
    assert _run(go(True)) == (["failed", "ok", "ok", "ok"], False)
    assert _run(go(False)) == (["failed"] * 4, False)
