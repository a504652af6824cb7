"""A reply (Producer.send_reply, reply_properties) goes out without a WAIT property, as 4.9.3's
MessageUtil.createReplyMessage builds it (the bare Message() constructor sets none; Message(topic, body) would
set WAIT=true): its properties string is the Java replier's, byte for byte.  Ours added WAIT=true, which the
broker stores as sent and pushes on, so the requester saw a property a Java replier's reply does not have and
the stored reply was ten bytes longer.  A plain message keeps its WAIT=true; a WAIT the user gives stays."""

from __future__ import annotations

from types import SimpleNamespace

from rocketstore.client.outgoing_message import OutgoingMessage, reply_properties
from rocketstore.message.properties import encode_properties

# a request as a consumer gets it (the broker added CLUSTER)
REQUEST = SimpleNamespace(properties={
    "CLUSTER": "DefaultCluster", "CORRELATION_ID": "7e7db194-ad26-4356-9932-b24daadf4770",
    "REPLY_TO_CLIENT": "192.0.2.2@req", "TTL": "8000", "TAGS": "RQ", "UNIQ_KEY": "AAAA", "WAIT": "true"})
UNIQ = "FD0000000000000000000000000000027A765FFD2B278EDD04730002"
# captured from 4.9.3: the properties string of a Java replier's reply (createReplyMessage + send) to that
# request, as the 4.9.3 broker stored it (the replier's UNIQ_KEY is UNIQ)
JAVA_REPLY_PROPERTIES = ("MSG_TYPE\x01reply\x02REPLY_TO_CLIENT\x01192.0.2.2@req\x02UNIQ_KEY\x01" + UNIQ
                         + "\x02TTL\x018000\x02CORRELATION_ID\x017e7db194-ad26-4356-9932-b24daadf4770")


def test_a_reply_has_the_properties_string_of_a_java_reply() -> None:
    topic, props = reply_properties(REQUEST)
    assert topic == "DefaultCluster_REPLY_TOPIC"
    sent = OutgoingMessage(b"re:req-sync", properties=props).property_map(UNIQ)
    assert "WAIT" not in sent
    assert encode_properties(sent) == JAVA_REPLY_PROPERTIES


def test_a_plain_message_and_a_wait_the_user_gives_keep_their_wait() -> None:
    assert OutgoingMessage(b"x", properties={"a": "b"}).property_map(UNIQ)["WAIT"] == "true"
    _, props = reply_properties(REQUEST, {"WAIT": "false"})
    assert OutgoingMessage(b"x", properties=props).property_map(UNIQ)["WAIT"] == "false"
