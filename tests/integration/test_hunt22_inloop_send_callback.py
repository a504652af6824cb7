"""A blocking producer's send callback sending again (4.9.3's SendCallback.onException resending with
send(msg, callback)): send_async from the callback, which runs on the producer's loop thread, is taken (it
does not wait), and the message is stored; a blocking send from there is refused at once, saying what to
use."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from local_cluster import LocalCluster, wait_stored

from rocketstore.client import BlockingProducer, SendResult


def test_a_send_callback_sends_again_with_send_async(cluster: LocalCluster) -> None:
    topic = "HuntInloopResend"
    cluster.create_topic(topic, 1)
    resent: list[Future[SendResult]] = []
    called_back = threading.Event()

    def on_sent(_: Future[SendResult]) -> None:
        try:
            resent.append(producer.send_async(topic, b"again"))
        finally:
            called_back.set()

    with BlockingProducer(cluster.namesrv_addr, "hunt22-inloop-resend") as producer:
        producer.send_async(topic, b"first").add_done_callback(on_sent)
        assert called_back.wait(30)
        assert len(resent) == 1
        assert resent[0].result(30).status == "SEND_OK"
    assert sorted(m.body for m in wait_stored(cluster, topic, 2, "both messages", queues=1)) == [
        b"again", b"first"]


def test_a_blocking_send_from_a_send_callback_is_refused_at_once(cluster: LocalCluster) -> None:
    topic = "HuntInloopRefused"
    cluster.create_topic(topic, 1)
    errors: list[BaseException] = []
    called_back = threading.Event()

    def on_sent(_: Future[SendResult]) -> None:
        try:
            producer.send(topic, b"blocking")
        except RuntimeError as exc:
            errors.append(exc)
        finally:
            called_back.set()

    with BlockingProducer(cluster.namesrv_addr, "hunt22-inloop-refused") as producer:
        producer.send_async(topic, b"first").add_done_callback(on_sent)
        assert called_back.wait(30)
    assert len(errors) == 1 and "send_async" in str(errors[0]), errors
