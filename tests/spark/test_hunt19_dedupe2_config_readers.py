"""The Spark side reads a store's config/*.json as the broker reads them at start (one reader,
rocketstore.config_json): the pipeline report's consumer lag and consumerOffset.json, the store source's
topic check and topics.json.  Whatever the file and its ``.bak`` hold, both sides take the same table, or
both refuse (CorruptFileError: such a broker does not start).  No Spark session: consumer_lag and
check_named_topics open the store read-only and read the files."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_hunt19_corrupt_report_offsets import _store

from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.offsets import ConsumerOffsetTable
from rocketstore.broker.topics import TopicTable
from rocketstore.errors import CorruptFileError, StoreConfigError
from rocketstore.remoting.bodies import TopicConfig
from rocketstore.spark.report import consumer_lag
from rocketstore.spark.store_options import StoreReadOptions, check_named_topics, configured_topics

MISSING = None
#: what a file may hold: missing, empty, JSON null, an array or a scalar (no object), cut short, a good table
CONTENTS: list[str | None] = [MISSING, "", "null", "[1, 2]", "7", "{\"offsetTable\":{\"T@g\":{\"0\":1",
                              json.dumps({"offsetTable": {"T@g": {"0": 1}, "T@h": {"0": 2}}}),
                              json.dumps({"offsetTable": {"T@g": {"0": 3}}}),
                              json.dumps({"offsetTable": [1]})]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("dedupe2"))


def _put(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(text, encoding="utf-8")


def _broker_offsets(config_dir: Path) -> dict[str, dict[int, int]] | type[CorruptFileError]:
    table = ConsumerOffsetTable(str(config_dir))
    try:
        table.load()
    except CorruptFileError:
        return CorruptFileError
    return table.all_json()


def _report_offsets(store: Path) -> dict[str, dict[int, int]] | type[CorruptFileError]:
    try:
        lags = consumer_lag(str(store))
    except CorruptFileError:
        return CorruptFileError
    found: dict[str, dict[int, int]] = {}
    for g in lags:
        found.setdefault(f"{g.topic}@{g.group}", {})[g.queue_id] = g.committed_offset
    return found


@pytest.mark.parametrize("bak", ["[1, 2]", "7", "\"x\""])
def test_a_bak_holding_no_object_fails_the_report_as_it_stops_the_broker(store: Path, bak: str) -> None:
    """consumerOffset.json missing, its .bak valid JSON but no object: 4.9.3's broker cannot decode it and
    does not start; the report raised nothing and showed no lag at all."""
    config = store / "config"
    _put(config / "consumerOffset.json", MISSING)
    _put(config / "consumerOffset.json.bak", bak)
    with pytest.raises(CorruptFileError):
        ConsumerOffsetTable(str(config)).load()
    with pytest.raises(CorruptFileError, match=r"consumerOffset\.json\.bak"):
        consumer_lag(str(store))


def test_the_report_and_the_broker_read_every_file_and_bak_alike(store: Path) -> None:
    config = store / "config"
    disagree = []
    for main, bak in itertools.product(CONTENTS, CONTENTS):
        _put(config / "consumerOffset.json", main)
        _put(config / "consumerOffset.json.bak", bak)
        broker, report = _broker_offsets(config), _report_offsets(store)
        if broker != report:
            disagree.append(f"file {main!r}, .bak {bak!r}: broker {broker}, report {report}")
    assert not disagree, "\n".join(disagree)


def _topics_file(config: Path, *names: str) -> None:
    """config/topics.json as the broker writes it, holding *names* (each write keeps the previous file as
    topics.json.bak)."""
    table = TopicTable(BrokerConfig(broker_name="b"), str(config))
    for name in names:
        table.update(TopicConfig.from_json({"topicName": name, "readQueueNums": 2, "writeQueueNums": 2,
                                            "perm": 6}))
    table.persist()


@pytest.mark.parametrize("damaged", [MISSING, "", "{\"topicConfigTable\":{", "[]",
                                     # a field of the wrong type: the broker takes the .bak, as 4.9.3 does
                                     json.dumps({"topicConfigTable": {"Made": {"topicName": "Made",
                                                                               "perm": "rw"}}})])
def test_the_store_source_knows_a_topic_the_broker_loads_from_topics_json_bak(store: Path,
                                                                               damaged: str | None) -> None:
    """A created topic with no messages reads as empty, not as a misspelt name, when topics.json is missing
    or damaged and the broker would take it from topics.json.bak (the source read only topics.json)."""
    config = store / "config"
    for name in ("topics.json", "topics.json.bak"):
        _put(config / name, MISSING)
    _topics_file(config, "Made")
    os.replace(config / "topics.json", config / "topics.json.bak")
    _put(config / "topics.json", damaged)

    broker = TopicTable(BrokerConfig(broker_name="b"), str(config))
    broker.load()
    assert broker.get("Made") is not None
    assert "Made" in configured_topics(str(store))
    opts = StoreReadOptions.parse({"path": str(store), "topics": "Made"})
    check_named_topics({"T": [0]}, opts)  # no StoreConfigError: the topic exists, empty
    with pytest.raises(StoreConfigError, match="option topics names 'Mad'"):
        check_named_topics({"T": [0]}, StoreReadOptions.parse({"path": str(store), "topics": "Mad"}))


def test_the_store_source_names_topics_as_the_broker_keys_them(store: Path) -> None:
    """An entry's key is the topic (as in 4.9.3's topicConfigTable map, whatever topicName says), for the
    broker and the source.  (An entry that is no object makes the file unreadable, the .bak read instead,
    as in 4.9.3: see tests/unit/broker/test_hunt21_configs_wrong_shape.py.)"""
    config = store / "config"
    for name in ("topics.json", "topics.json.bak"):
        _put(config / name, MISSING)
    _put(config / "topics.json", json.dumps({"topicConfigTable": {
        "Key": {"topicName": "Named", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6},
        "Bare": {"readQueueNums": 1, "writeQueueNums": 1, "perm": 6}}}))
    broker = TopicTable(BrokerConfig(broker_name="b"), str(config))
    broker.load()
    loaded = [broker.get(t) is not None for t in ("Named", "Bare", "Key")]
    assert loaded == [False, True, True]
    assert configured_topics(str(store)) == {"Key", "Bare"}
