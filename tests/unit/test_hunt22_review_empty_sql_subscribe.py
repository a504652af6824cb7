"""An empty SQL92 expression given to a push or lite pull consumer's subscribe (session 22's review): 4.9.3's
subscribe builds the subscription with FilterAPI.build, which throws for an empty expression of a type other
than TAG ("Expression can't be null!"), so the call fails at once.  Taken, every pull of the topic's queues
was refused by the broker (SUBSCRIPTION_PARSE_FAILED) and the consumer consumed nothing, for ever."""

from __future__ import annotations

import pytest

from rocketstore.client import ConsumeStatus, LitePullConsumer, PushConsumer
from rocketstore.client.consumer import MessageSelector

EMPTY_SQL = MessageSelector.by_sql("")


def _handler(batch: object) -> ConsumeStatus:
    return ConsumeStatus.CONSUME_SUCCESS


def test_a_push_consumer_refuses_an_empty_sql92_subscription() -> None:
    with pytest.raises(ValueError, match="SQL92 expression of T is empty"):
        PushConsumer("127.0.0.1:9876", "hunt22-review-push", {"T": EMPTY_SQL}, _handler)
    consumer = PushConsumer("127.0.0.1:9876", "hunt22-review-push", {"T": "*"}, _handler)
    with pytest.raises(ValueError, match="SQL92 expression of U is empty"):
        consumer.subscribe("U", EMPTY_SQL)
    assert "U" not in consumer.subscriptions
    consumer.subscribe("U", MessageSelector.by_sql("a > 1"))
    assert consumer.subscriptions["U"].sub_string == "a > 1"


def test_a_lite_pull_consumer_refuses_an_empty_sql92_subscription() -> None:
    consumer = LitePullConsumer("127.0.0.1:9876", "hunt22-review-lite")
    with pytest.raises(ValueError, match="SQL92 expression of T is empty"):
        consumer.subscribe("T", EMPTY_SQL)
    assert "T" not in consumer.subscriptions
