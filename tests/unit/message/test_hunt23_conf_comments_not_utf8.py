"""A broker.conf / namesrv.conf / tls.properties whose comments were saved by a GBK or Latin-1 editor (a
Chinese remark above a setting) is read: 4.9.3 reads every byte as ISO-8859-1 and passes comments over, so
its broker starts.  Bytes that are not UTF-8 in a key or a value are still refused, naming the file and the
byte (what they mean is not known)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.errors import StoreConfigError
from rocketstore.message.java_properties import read_properties_file


def test_comments_in_another_encoding_are_passed_over(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_bytes("# 集群名称\nbrokerClusterName=DefaultCluster\n".encode("gbk")  # a GBK remark
                     + b"! caf\xe9\nbrokerName=broker-a\nlistenPort=10911\n")  # a Latin-1 one
    assert read_properties_file(str(conf)) == {"brokerClusterName": "DefaultCluster", "brokerName": "broker-a",
                                               "listenPort": "10911"}


@pytest.mark.parametrize("line", [b"brokerName=broker-\xe9\n", b"caf\xe9=1\n", b"a=1\\\n  \xe9\n"])
def test_bytes_that_are_not_utf8_in_a_setting_are_refused(tmp_path: Path, line: bytes) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"# fine\n" + line)
    with pytest.raises(StoreConfigError, match=r"not UTF-8 text \(.* at byte \d+\)"):
        read_properties_file(str(conf))
