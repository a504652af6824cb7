"""Where a group starts, and which model it consumes in, given by name (session 22's hunt): the settings are
StrEnums, so ``"CONSUME_FROM_FIRST_OFFSET"`` or ``"CLUSTERING"`` read from a config file look right; they
were kept as plain strings, which failed the consumers' identity tests (``is ConsumeFromWhere...``)."""

from __future__ import annotations

import pytest

from rocketstore.client import ConsumedMessage, ConsumeFromWhere, ConsumeStatus, MessageModel, PushConsumer
from rocketstore.client.group_consumer import ConsumerSettingsError
from rocketstore.client.lite_pull_consumer import LitePullConsumer
from rocketstore.client.offset_store import RemoteOffsetStore

NAMESRV = "127.0.0.1:1"  # never reached: nothing here starts


def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def test_a_message_model_given_by_name_is_that_model() -> None:
    consumer = PushConsumer(NAMESRV, "hunt22-model-group", {"T": "*"}, handle,
                            message_model="CLUSTERING")
    # was a BROADCASTING member (every queue, offsets in a local file) while its heartbeat said
    # CLUSTERING
    assert consumer.clustering
    assert isinstance(consumer.offsets, RemoteOffsetStore)
    assert consumer.settings.message_model is MessageModel.CLUSTERING


@pytest.mark.parametrize("where", list(ConsumeFromWhere))
def test_a_start_given_by_name_is_that_start(where: ConsumeFromWhere) -> None:
    name = str(where)  # what a config file gives
    for consumer in (PushConsumer(NAMESRV, "hunt22-where-group", {"T": "*"}, handle, consume_from_where=name),
                     LitePullConsumer(NAMESRV, "hunt22-where-group", consume_from_where=name)):
        assert consumer.settings.consume_from_where is where


@pytest.mark.parametrize(("setting", "value", "says"), [
    ("consume_from_where", "CONSUME_FROM_FIRST",
     "consume_from_where must be one of CONSUME_FROM_LAST_OFFSET, CONSUME_FROM_FIRST_OFFSET, "
     "CONSUME_FROM_TIMESTAMP: 'CONSUME_FROM_FIRST'"),
    ("message_model", "clustering", "message_model must be one of CLUSTERING, BROADCASTING: 'clustering'"),
    ("consume_timestamp_ms", "20240101000000", "consume_timestamp_ms must be milliseconds since the epoch"),
    ("consume_timestamp_ms", -1, "consume_timestamp_ms must be milliseconds since the epoch"),
])
def test_a_setting_that_names_nothing_is_refused_when_the_consumer_is_made(setting: str, value: object,
                                                                            says: str) -> None:
    with pytest.raises(ConsumerSettingsError, match=says):
        PushConsumer(NAMESRV, "hunt22-bad-group", {"T": "*"}, handle, **{setting: value})
    with pytest.raises(ConsumerSettingsError, match=says):
        LitePullConsumer(NAMESRV, "hunt22-bad-group", **{setting: value})
