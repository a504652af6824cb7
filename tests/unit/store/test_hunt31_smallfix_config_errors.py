"""StoreConfig.from_properties names every value that is bad as given, and only those.

__post_init__ stops at the first bad value, so from_properties searched for the others by building a config
of each value alone (every other field at its default).  That search named a value that is bad only against
a default the file replaces, missed a pair bad only together when another value was bad too, and with a bad
override (a caller's keyword) found nothing past it, as every trial met the override's error first.  The
search now keeps the values that hold together and names what is refused against them.  The two-field
checks here come from a subclass (StoreConfig's own checks are one field each); the search is the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rocketstore.errors import StoreConfigError
from rocketstore.store.config import StoreConfig

MAPPED_SIZE_ERROR = "mappedFileSizeCommitLog must be at least 4096 bytes"


@dataclass(frozen=True, slots=True)
class _PairConfig(StoreConfig):
    alpha: int = 10
    beta: int = 20

    def __post_init__(self) -> None:
        StoreConfig.__post_init__(self)
        if self.alpha > self.beta:
            raise StoreConfigError(f"alpha ({self.alpha}) must not exceed beta ({self.beta})")


def _error(cls: type[StoreConfig], props: dict[str, str], **overrides: object) -> str:
    with pytest.raises(StoreConfigError) as info:
        cls.from_properties(props, **overrides)
    return str(info.value)


def test_a_bad_override_does_not_hide_the_bad_properties() -> None:
    # warmAheadBytes is checked before mappedFileSizeConsumeQueue: each trial met the override's error first
    assert _error(StoreConfig, {"mappedFileSizeConsumeQueue": "5"}, warm_ahead_bytes=-1) == (
        "mappedFileSizeConsumeQueue must hold at least one entry; warmAheadBytes must be 0 (off) or more")


def test_a_value_bad_only_against_a_default_it_replaces_is_not_named() -> None:
    # alpha 25 exceeds beta's default (20), not the beta of the file (30): only the commitlog size is bad
    props = {"alpha": "25", "beta": "30", "mappedFileSizeCommitLog": "100"}
    assert _error(_PairConfig, props) == MAPPED_SIZE_ERROR
    assert _PairConfig.from_properties({"alpha": "25", "beta": "30"}).alpha == 25


def test_values_bad_only_together_are_named_beside_another_bad_value() -> None:
    # each is fine with the other's default; together they are not
    props = {"alpha": "15", "beta": "12", "mappedFileSizeCommitLog": "100"}
    assert _error(_PairConfig, props) == f"alpha (15) must not exceed beta (12); {MAPPED_SIZE_ERROR}"
    assert _error(_PairConfig, {"alpha": "15", "beta": "12"}) == "alpha (15) must not exceed beta (12)"


def test_every_value_bad_alone_is_named_once() -> None:
    props = {"maxMessageSize": "0", "mappedFileSizeCommitLog": "100", "maxHashSlotNum": "0", "maxIndexNum": "1",
             "flushDiskType": "SOMETIMES", "warmAheadBytes": "-1"}
    assert _error(StoreConfig, props).split("; ") == [
        "maxMessageSize must be at least 1 byte", MAPPED_SIZE_ERROR,
        "maxHashSlotNum must be >= 1 and maxIndexNum >= 2",
        "flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not 'SOMETIMES'", "warmAheadBytes must be 0 (off) or more"]
