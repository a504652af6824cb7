"""The broker's JSON files (topics.json, consumerOffset.json, ...) written on a full file system: the file is
replaced whole or not at all, its ``.bak`` is never left truncated, and a failed write gives its space back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.broker.config_files import read_json_file, write_json_atomically
from rocketstore.files import write_text_atomically

from .hunt17_diskfull_fs import PAGE, fill, free_bytes, small_fs


def test_a_write_that_does_not_fit_keeps_the_old_file_and_gives_its_space_back(tmp_path: Path) -> None:
    with small_fs(tmp_path, "256k") as mnt:
        path = str(mnt / "consumerOffset.json")
        write_json_atomically(path, {"offsetTable": {"T@g": {"0": 1}}})
        write_json_atomically(path, {"offsetTable": {"T@g": {"0": 2}}})
        fill(mnt, leave_bytes=3 * PAGE)
        before = free_bytes(mnt)
        big = {"offsetTable": {f"Topic{i}@group": {"0": i} for i in range(2000)}}  # ~60 KB: does not fit
        with pytest.raises(OSError):
            write_json_atomically(path, big)
        assert read_json_file(path) == {"offsetTable": {"T@g": {"0": 2}}}
        assert read_json_file(path + ".bak") == {"offsetTable": {"T@g": {"0": 1}}}
        # the part of the new file that was written is gone: the store needs every page of a full disk
        assert sorted(os.listdir(mnt)) == ["consumerOffset.json", "consumerOffset.json.bak", "scratch"]
        assert free_bytes(mnt) == before


def test_the_previous_file_becomes_a_whole_bak_even_when_a_copy_would_not_fit(tmp_path: Path) -> None:
    # 4.9.3's string2File (and ours before) rewrote <file>.bak in place with the previous content: with less
    # space than that content, the .bak was left truncated (the fallback read when the file is unreadable)
    # and the new content was never installed
    with small_fs(tmp_path, "256k") as mnt:
        path = str(mnt / "topics.json")
        write_text_atomically(path, '{"v":"' + "a" * 50 + '"}')
        previous = '{"v":"' + "b" * 40000 + '"}'
        write_text_atomically(path, previous)
        fill(mnt, leave_bytes=2 * PAGE)
        write_text_atomically(path, '{"v":"c"}')
        assert Path(path).read_text(encoding="utf-8") == '{"v":"c"}'
        assert Path(path + ".bak").read_text(encoding="utf-8") == previous
        assert sorted(os.listdir(mnt)) == ["scratch", "topics.json", "topics.json.bak"]
        # the .bak is the previous file itself, no longer a name of the new one
        assert os.stat(path).st_ino != os.stat(path + ".bak").st_ino
        assert os.stat(path).st_nlink == 1


def test_the_bak_keeps_following_the_previous_content_write_after_write(tmp_path: Path) -> None:
    path = str(tmp_path / "config" / "subscriptionGroup.json")
    for i in range(4):
        write_text_atomically(path, f'{{"n":{i}}}')
        assert Path(path).read_text(encoding="utf-8") == f'{{"n":{i}}}'
        if i:
            assert Path(path + ".bak").read_text(encoding="utf-8") == f'{{"n":{i - 1}}}'
    write_text_atomically(path, "")
    write_text_atomically(path, '{"n":5}')
    assert Path(path + ".bak").read_text(encoding="utf-8") == '{"n":3}'  # an empty file is no previous content
    assert sorted(os.listdir(tmp_path / "config")) == ["subscriptionGroup.json", "subscriptionGroup.json.bak"]


def test_a_file_that_is_a_symbolic_link_gets_a_copy_as_bak_and_its_target_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text('{"n":1}', encoding="utf-8")
    path = tmp_path / "config" / "topics.json"
    path.parent.mkdir()
    path.symlink_to(target)
    write_text_atomically(str(path), '{"n":2}')
    assert path.read_text(encoding="utf-8") == '{"n":2}' and not path.is_symlink()
    bak = Path(str(path) + ".bak")
    assert bak.read_text(encoding="utf-8") == '{"n":1}' and not bak.is_symlink()
    assert os.stat(bak).st_ino != os.stat(target).st_ino
    assert target.read_text(encoding="utf-8") == '{"n":1}'
