"""DefaultMQPushConsumerImpl.checkConfig's ranges (4.9.3), on our equivalents of its parameters: a push
consumer is refused when it is made, with ConsumerSettingsError (a ClientError and a ValueError) naming our
setting, its range and Java's; the range's ends are accepted."""

from __future__ import annotations

from typing import Any

import pytest

from rocketstore.client import ConsumeStatus, PushConsumer
from rocketstore.client.errors import ClientError
from rocketstore.client.group_consumer import ConsumerSettingsError
from rocketstore.client.push_consumer import PushConsumerSettings

MIB = 1 << 20

#: (our setting, refused values, accepted ends, Java's name)
RANGES: list[tuple[str, list[Any], list[Any], str]] = [
    ("consume_concurrency", [0, 1001], [1, 1000], "consumeThreadMin/consumeThreadMax"),
    ("consume_max_span", [0, 65536], [1, 65535], "consumeConcurrentlyMaxSpan"),
    ("pull_threshold_for_queue", [0, 65536], [1, 65535], "pullThresholdForQueue"),
    ("pull_threshold_for_topic", [0, -2, 6553501], [-1, 1, 6553500], "pullThresholdForTopic"),
    ("pull_threshold_bytes_for_queue", [0, MIB - 1, 1024 * MIB + 1], [MIB, 1024 * MIB],
     "pullThresholdSizeForQueue"),
    ("pull_threshold_bytes_for_topic", [0, MIB - 1, 102400 * MIB + 1], [-1, MIB, 102400 * MIB],
     "pullThresholdSizeForTopic"),
    ("pull_interval_s", [-0.001, 65.536], [0.0, 65.535], "pullInterval"),
    ("consume_batch_size", [0, 1025], [1, 1024], "consumeMessageBatchMaxSize"),
    ("pull_batch_size", [0, 1025], [1, 1024], "pullBatchSize"),
]


def _handler(messages: object) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


@pytest.mark.parametrize(("name", "refused", "accepted", "java_name"), RANGES, ids=[r[0] for r in RANGES])
def test_push_consumer_settings_out_of_javas_range_are_refused_when_made(
        name: str, refused: list[Any], accepted: list[Any], java_name: str) -> None:
    for value in refused:
        with pytest.raises(ConsumerSettingsError, match=name) as caught:
            PushConsumer("127.0.0.1:9876", "hunt17-ranges", {"T": "*"}, _handler, **{name: value})
        assert java_name in str(caught.value) and repr(value) in str(caught.value)
        assert isinstance(caught.value, ClientError) and isinstance(caught.value, ValueError)
        with pytest.raises(ConsumerSettingsError, match=name):
            PushConsumer("127.0.0.1:9876", "hunt17-ranges", {"T": "*"}, _handler,
                         PushConsumerSettings(**{name: value}))
    for value in accepted:
        PushConsumerSettings(**{name: value}).check()


def test_the_message_gives_our_range_in_our_unit() -> None:
    with pytest.raises(ConsumerSettingsError) as caught:
        PushConsumerSettings(pull_threshold_bytes_for_queue=100).check()
    assert str(caught.value) == ("pull_threshold_bytes_for_queue out of range [1048576, 1073741824]: 100 "
                                 "(4.9.3: pullThresholdSizeForQueue Out of range [1, 1024])")


def test_the_defaults_pass() -> None:
    PushConsumerSettings().check()
    PushConsumerSettings(orderly=True).check()
