"""Signing corner cases, as RocketMQ 4.9.3's broker computes the signature it checks: its TreeMap orders the
extFields' keys by UTF-16 code units (a character past U+FFFF, a surrogate pair, sorts before one in
U+E000..U+FFFF), and String.getBytes(UTF-8) turns an unpaired surrogate into "?" in the secret key as in
the content (before, such a secret key made the check raise instead of answering)."""

from __future__ import annotations

from pathlib import Path

from rocketstore.broker.acl import PlainAcl
from rocketstore.remoting.acl_signing import sign, sign_ext_fields, signing_content
from rocketstore.remoting.codes import RequestCode


def test_keys_sort_by_utf16_code_units() -> None:
    fields = {"\ufffd": "b", "\U0001f600": "a", "k": "c"}
    assert signing_content(fields) == b"cab"  # 'k' (006B), then D83D DE00, then FFFD
    assert signing_content({"b": "2", "a": "1", "Signature": "x"}, b"!") == b"12!"


def test_a_secret_key_with_an_unpaired_surrogate_signs_it_as_a_question_mark(tmp_path: Path) -> None:
    assert sign("s3cret\ud800key", b"content") == sign("s3cret?key", b"content")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(
        'accounts:\n  - accessKey: rocketstore-app\n    secretKey: "s3cret\\ud800key"\n    defaultTopicPerm: PUB\n',
        encoding="utf-8")
    acl = PlainAcl(tmp_path)
    good = sign_ext_fields({"topic": "t"}, b"x", "rocketstore-app", "s3cret?key")
    assert acl.check(RequestCode.SEND_MESSAGE, good, b"x", "8.8.8.8") is None
    bad = sign_ext_fields({"topic": "t"}, b"x", "rocketstore-app", "s3cret-key")
    assert acl.check(RequestCode.SEND_MESSAGE, bad, b"x", "8.8.8.8") == \
        "Check signature failed for accessKey=rocketstore-app"
