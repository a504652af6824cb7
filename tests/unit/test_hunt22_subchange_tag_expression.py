"""Tag expressions that name no tag (session 22's hunt): 4.9.3's buildSubscriptionData refuses ``"||"`` (its
split finds no piece, "subString split error"), so subscribe() fails at once instead of a consumer that
waits forever for messages no tag code matches."""

from __future__ import annotations

import pytest

from rocketstore.client import ConsumeStatus, PushConsumer
from rocketstore.client.consumer import MessageSelector, subscription_for


@pytest.mark.parametrize("expression", ["||", "||||", " || ", MessageSelector("TAG", "||")])
def test_a_tag_expression_of_separators_only_is_refused(expression: str | MessageSelector) -> None:
    with pytest.raises(ValueError, match="names no tag"):
        subscription_for("T", expression)


@pytest.mark.parametrize(("expression", "tags"), [
    ("*", ()), ("", ()), ("a||", ("a",)), ("|||", ("|",)), (" a || b ", ("a", "b")), ("a || a", ("a",)),
    ("a b", ("a b",))])
def test_expressions_that_name_tags_or_everything_are_kept(expression: str, tags: tuple[str, ...]) -> None:
    assert subscription_for("T", expression).tags_set == tags


def test_a_push_consumer_refuses_such_a_subscription_when_subscribing() -> None:
    with pytest.raises(ValueError, match="names no tag"):
        PushConsumer("127.0.0.1:9876", "hunt22-tag-group", {"T": "||"}, lambda batch: ConsumeStatus.CONSUME_SUCCESS)
    consumer = PushConsumer("127.0.0.1:9876", "hunt22-tag-group", {"T": "*"}, lambda batch: ConsumeStatus.CONSUME_SUCCESS)
    with pytest.raises(ValueError, match="names no tag"):
        consumer.subscribe("U", "||")
    assert "U" not in consumer.subscriptions
