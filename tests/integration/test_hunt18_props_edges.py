"""Message properties the broker could not store as given are refused by the producer before a send.

4.9.3's broker parses the properties string by its separators (\\u0001 between name and value, \\u0002
between pairs) and drops pairs with an empty name or value: a name holding either separator, or a value,
tag or key holding \\u0002, is stored as other properties than were sent (silently, in 4.9.3), and an
empty one vanishes (Java's putUserProperty refuses it).  The Python producer refuses both with MessageIllegalError, on every send
path, and stores nothing; the messages beside them still go through.
"""

from __future__ import annotations

import pytest

from local_cluster import LocalCluster, run_within, stored_messages
from serve_process import cli
from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.errors import MessageIllegalError

TOPIC = "PropsEdges"

BAD_SENDS = [
    pytest.param({"properties": {"k": "a\x02z\x01c"}}, id="value-with-pair-separator"),
    pytest.param({"properties": {"k\x01x": "v"}}, id="name-with-separator"),
    pytest.param({"properties": {"k": ""}}, id="empty-value"),
    pytest.param({"properties": {"": "v"}}, id="empty-name"),
    pytest.param({"tags": "t\x02KEYS\x01forged"}, id="tags-with-separator"),
    pytest.param({"keys": "k\x02x"}, id="keys-with-separator"),
    pytest.param({"keys": ["a", "b\x02c"]}, id="key-list-with-separator"),
]


def _only_marker_stored(cluster: LocalCluster) -> None:
    cluster.wait_dispatched()
    stored = stored_messages(cluster, TOPIC, queues=1)
    assert [m.body for m in stored] == [b"marker"]
    assert stored[0].properties["p"] == "q"


@pytest.mark.parametrize("kwargs", BAD_SENDS)
def test_send_refuses_properties_the_broker_would_change(cluster: LocalCluster, kwargs: dict) -> None:
    cluster.create_topic(TOPIC, queues=1)

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "props-edges") as producer:
            with pytest.raises(MessageIllegalError) as sync_refused:
                await producer.send(TOPIC, b"bad", **kwargs)
            with pytest.raises(MessageIllegalError):
                await producer.send_oneway(TOPIC, b"bad", **kwargs)
            with pytest.raises(MessageIllegalError):
                await producer.send_orderly(TOPIC, b"bad", "shard", **kwargs)
            assert sync_refused.value.code == 13  # MESSAGE_ILLEGAL
            result = await producer.send(TOPIC, b"marker", properties={"p": "q"})
            assert result.status == "SEND_OK"

    run_within(scenario, 30)
    _only_marker_stored(cluster)


@pytest.mark.parametrize("bad", [
    pytest.param(OutgoingMessage(b"bad", properties={"k": "a\x02b"}), id="entry-property"),
    pytest.param(OutgoingMessage(b"bad", properties={"k": ""}), id="entry-empty-value"),
    pytest.param(OutgoingMessage(b"bad", keys="x\x02y"), id="entry-keys"),
    pytest.param(OutgoingMessage(b"bad", tags="t\x02u"), id="entry-tags-mixed-batch"),
])
def test_batch_refuses_an_entry_the_broker_would_change(cluster: LocalCluster, bad: OutgoingMessage) -> None:
    cluster.create_topic(TOPIC, queues=1)

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "props-edges") as producer:
            with pytest.raises(MessageIllegalError):
                await producer.send_batch(TOPIC, [OutgoingMessage(b"good", tags="ok", keys="k1"), bad])
            result = await producer.send(TOPIC, b"marker", properties={"p": "q"})
            assert result.status == "SEND_OK"

    run_within(scenario, 30)
    _only_marker_stored(cluster)


def test_uniform_batch_refuses_tags_with_separator(cluster: LocalCluster) -> None:
    """A batch of like messages (same tags, flag and body length, nothing else) is laid out column-wise
    from a template: its tags are checked there too."""
    cluster.create_topic(TOPIC, queues=1)

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "props-edges") as producer:
            with pytest.raises(MessageIllegalError):
                await producer.send_batch(TOPIC, [OutgoingMessage(b"bad", tags="t\x02x")] * 3)
            result = await producer.send(TOPIC, b"marker", properties={"p": "q"})
            assert result.status == "SEND_OK"

    run_within(scenario, 30)
    _only_marker_stored(cluster)


def test_properties_that_survive_are_sent_as_given(cluster: LocalCluster) -> None:
    """What the check lets through reaches the store unchanged: 4-byte UTF-8, blanks that are not empty,
    several keys, a None value (skipped, as Java skips a null value), a value holding \\u0001 (4.9.3's parser
    cuts a pair at its first \\u0001 only)."""
    cluster.create_topic(TOPIC, queues=1)
    props = {"emoji\U0001F600": "v\U0001F680", "blank": " ", "skipped": None, "sep1": "a\x01b"}

    async def scenario() -> None:
        async with Producer(cluster.namesrv_addr, "props-edges") as producer:
            result = await producer.send(TOPIC, b"kept", tags="t\U0001F600", keys=["a", "b\U0001F600"],
                                         properties=props)
            assert result.status == "SEND_OK"

    run_within(scenario, 30)
    cluster.wait_dispatched()
    [stored] = stored_messages(cluster, TOPIC, queues=1)
    assert stored.properties["emoji\U0001F600"] == "v\U0001F680"
    assert stored.properties["blank"] == " "
    assert "skipped" not in stored.properties
    assert stored.properties["sep1"] == "a\x01b"
    assert stored.tags == "t\U0001F600"
    assert stored.keys == "a b\U0001F600"


def test_cli_send_refuses_an_empty_property_value_in_one_line(cluster: LocalCluster) -> None:
    """``rocketstore send --property k=`` used to store the message without k (the broker drops the pair);
    now it fails as a refused send does: one line, exit status 1, nothing stored."""
    cluster.create_topic(TOPIC, queues=1)
    ns = ("--namesrv", cluster.namesrv_addr)
    out = cli("send", TOPIC, "bad", "--property", "k=", *ns)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "MESSAGE_ILLEGAL" in out.stderr and "can not be empty" in out.stderr
    assert cli("send", TOPIC, "marker", "--property", "p=q", *ns).returncode == 0
    _only_marker_stored(cluster)
