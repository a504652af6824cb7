"""The Python client's errors for a topic without route and for a client without name server say what a
4.9.3 Java client says (DefaultMQProducerImpl: "No route info of this topic: <topic>" and "No name server
address, please set it.", each followed by FAQUrl.suggestTodo's link), so users and their log searches
find the same words; our detail of what went wrong follows.  A real name server and broker on 127.0.0.1."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from test_route_unknown_topic import _unknown_topic_send_error

from rocketstore.client import BlockingProducer, Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError
from rocketstore.remoting.transport import run

FAQ = "See http://rocketmq.apache.org/docs/faq/ for further details."


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_send_to_an_unknown_topic_says_no_route_info_of_this_topic(tmp_path: Path) -> None:
    error = _unknown_topic_send_error(tmp_path, "Hunt19NoRouteHere", "closeroute-texts")
    text = str(error)
    assert text.startswith(f"No route info of this topic: Hunt19NoRouteHere {FAQ} Cause: "), text
    # our detail follows once: the topic is unknown, and so is the auto-create template (named; one link)
    assert "the name servers do not know it" in text and "TBW102" in text, text
    assert text.count(FAQ) == 1, text
    assert error.topic == "Hunt19NoRouteHere"


def test_a_send_while_no_name_server_answers_says_no_route_info_of_this_topic() -> None:
    async def send() -> None:
        async with Producer(f"127.0.0.1:{_closed_port()}", "closeroute-texts", retry_times=0, timeout_s=1.0,
                            mq_client_api_timeout_s=1.0) as producer:
            await producer.send("Hunt19Unreachable", b"x")

    with pytest.raises(NoRouteError) as caught:
        run(send())
    assert str(caught.value).startswith(f"No route info of this topic: Hunt19Unreachable {FAQ} Cause: ")


def test_a_client_without_name_server_address_says_please_set_it() -> None:
    expected = f"No name server address, please set it. {FAQ}"
    for make in (lambda: Producer("", "closeroute-texts"), lambda: Producer(";", "closeroute-texts"),
                 lambda: AdminClient("")):
        with pytest.raises(ValueError) as caught:
            make()
        assert str(caught.value) == expected
    with pytest.raises(ValueError) as caught:
        BlockingProducer("", "closeroute-texts")
    assert str(caught.value) == expected
