"""The start warning about broker.conf keys that are no property says what an operator coming from 4.9.3 needs
to act on it: the property a misspelt key probably meant (``mapedFileSizeConsumeQueue``, the old spelling
4.9.3 ignores too, ``flushDiskTyp``), and that the store paths many 4.x guides set (storePathConsumeQueue,
storePathIndex, storeCheckpoint, abortFile) are always under storePathRootDir, as 4.9.3's
StorePathConfigHelper puts them.

Found starting `rocketstore serve -c broker.conf` with a 4.9.3 operator's broker.conf: the warning listed
those keys as "no broker property (kept as given)" and nothing more, so a typo of a key that matters (a
flushDiskType left ASYNC_FLUSH) read the same as a harmless leftover."""

from __future__ import annotations

from rocketstore.broker.stats_admin import start_file_notice


def test_a_misspelt_key_names_the_property_it_probably_meant() -> None:
    notice = start_file_notice({"mapedFileSizeConsumeQueue": "300000", "flushDiskTyp": "SYNC_FLUSH",
                                "deletewhen": "04", "brokerName": "b"})
    assert notice is not None
    assert "mapedFileSizeConsumeQueue (did you mean mappedFileSizeConsumeQueue?)" in notice
    assert "flushDiskTyp (did you mean flushDiskType?)" in notice
    assert "deletewhen (did you mean deleteWhen?)" in notice
    assert "brokerName" not in notice


def test_the_store_paths_4_9_3_derives_say_so_and_a_stranger_key_gets_no_guess() -> None:
    notice = start_file_notice({"storePathConsumeQueue": "/data/cq", "storePathIndex": "/data/index",
                                "storeCheckpoint": "/data/checkpoint", "abortFile": "/data/abort",
                                "myOwnSetting": "1"})
    assert notice is not None
    for name in ("storePathConsumeQueue", "storePathIndex", "storeCheckpoint", "abortFile"):
        assert f"{name} (always under storePathRootDir, as in 4.9.3)" in notice
    assert "myOwnSetting, " in notice  # named, with no guess after it
