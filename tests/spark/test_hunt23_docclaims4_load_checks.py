"""A bad option of the ``rocketmq-store`` reader fails at ``load()``, where the read is defined (as docs/spark.md
says, and as Spark's Kafka source checks its options), not only at the DataFrame's first action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("options", "words"), [
    ({"includeBody": "maybe"}, "option includeBody='maybe' is not true or false"),
    ({"startingOffsets": "latest"}, "startingOffsets=latest would read nothing"),
    ({"endingOffsets": '{"TopicA":{"0":-2}}'}, "option endingOffsets gives -2 \\(earliest\\) for TopicA/0"),
    ({"topics": "A", "topicPattern": "B.*"}, "give either 'topics' or 'topicPattern', not both"),
])
def test_a_bad_option_fails_at_load(spark: Any, golden_dir: Path, options: dict[str, str], words: str) -> None:
    reader = spark.read.format("rocketmq-store").option("path", str(golden_dir / "stores" / "clean"))
    with pytest.raises(Exception, match=words):
        reader.options(**options).load()


def test_a_missing_store_fails_at_load(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="is not a directory"):
        spark.read.format("rocketmq-store").load(str(tmp_path / "nothing-here"))


def test_good_options_still_load_and_read(spark: Any, golden_dir: Path) -> None:
    df = (spark.read.format("rocketmq-store").option("topics", "TopicV6").option("includeBody", "false")
          .load(str(golden_dir / "stores" / "clean")))
    assert df.count() == 4
