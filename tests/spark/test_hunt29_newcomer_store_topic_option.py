"""The rocketmq-store source refuses the topic options of the rocketmq source and sink (``topic``,
``subscribe``, ``subscribePattern``) instead of ignoring them: ``.option("topic", "TopicA")``, copied from
the sink or from Kafka habits, read every topic of the store, silently.  ``topics`` and ``topicPattern``
work as before."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore.errors import StoreConfigError
from rocketstore.spark.store_options import StoreReadOptions

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("key", ["topic", "subscribe", "subscribePattern", "TOPIC"])
def test_another_sources_topic_option_is_refused_naming_the_right_ones(tmp_path: Path, key: str) -> None:
    (tmp_path / "commitlog").mkdir()
    with pytest.raises(StoreConfigError, match=r"not the rocketmq-store source's: .*'topics'.*'topicPattern"):
        StoreReadOptions.parse({"path": str(tmp_path), key: "TopicA"})


def test_topics_and_topic_pattern_still_pass(tmp_path: Path) -> None:
    (tmp_path / "commitlog").mkdir()
    assert StoreReadOptions.parse({"path": str(tmp_path), "topics": "TopicA"}).topics == ("TopicA",)
    assert StoreReadOptions.parse({"path": str(tmp_path), "topicPattern": "Topic.*"}).topics is None
