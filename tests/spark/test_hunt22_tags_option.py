"""The rocketmq source's ``tags`` option is checked when the query is defined, as ``sql`` is: a tag expression
of separators only (``'||'``) names no tag (4.9.3's subscribe refuses it); taken, every pull on the executors
raised it, late and without naming the option."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed: pip install 'rocketstore[spark]'")

from rocketstore.spark.stream_options import SourceOptions, SparkOptionError

BASE = {"nameServer": "127.0.0.1:9876", "subscribe": "T"}


@pytest.mark.parametrize("tags", ["||", "||||", " || "])
def test_a_tag_expression_naming_no_tag_is_refused_with_the_option(tags: str) -> None:
    with pytest.raises(SparkOptionError, match="option tags: .*names no tag"):
        SourceOptions.parse({**BASE, "tags": tags}, streaming=True)


@pytest.mark.parametrize("tags", ["TagA || TagB", "*", "", "|| TagA"])
def test_tag_expressions_naming_tags_are_taken(tags: str) -> None:
    assert SourceOptions.parse({**BASE, "tags": tags}, streaming=False).selector.expression_type == "TAG"
