"""The rocketmq-store source's ``tags`` option of separators only (``'||'``) names no tag: its tag codes were
the empty set, so every queue read matched nothing and the read came back empty without a word (the
rocketmq source refuses such an option when the query is defined; this one now does too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.errors import StoreConfigError
from rocketstore.spark.store_options import StoreReadOptions


@pytest.mark.parametrize("tags", ["||", " || ", "||||"])
def test_a_tag_expression_naming_no_tag_is_refused_with_the_option(golden_dir: Path, tags: str) -> None:
    with pytest.raises(StoreConfigError, match="option 'tags' .*names no tag"):
        StoreReadOptions.parse({"path": str(golden_dir / "stores" / "clean"), "tags": tags})


@pytest.mark.parametrize(("tags", "wanted"), [("*", None), ("", None), (" a ||b|| ", frozenset({"a", "b"}))])
def test_tag_expressions_naming_tags_or_all_are_taken(golden_dir: Path, tags: str, wanted: object) -> None:
    opts = StoreReadOptions.parse({"path": str(golden_dir / "stores" / "clean"), "tags": tags})
    assert opts.tag_set() == wanted
