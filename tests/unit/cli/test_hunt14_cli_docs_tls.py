"""docs/tls.md's tls.properties, copied as it stands, is a file ``--tls-config`` accepts and that means what
its comments say.  Java properties have no comments after a value (``a=b  # c`` is the value ``b  # c``),
so every comment must sit on its own line."""

from __future__ import annotations

import re
from pathlib import Path

from rocketstore.message.java_properties import parse_properties_text
from rocketstore.remoting.tls import TlsConfig, TlsMode

TLS_MD = Path(__file__).resolve().parents[3] / "docs" / "tls.md"


def test_the_documented_tls_properties_file_loads_as_described() -> None:
    [block] = re.findall(r"```properties\n(.*?)```", TLS_MD.read_text(encoding="utf-8"), re.DOTALL)
    props = parse_properties_text(block)
    assert all("#" not in value for value in props.values()), props
    config = TlsConfig.from_properties(props)
    assert config.server_mode is TlsMode.PERMISSIVE
    assert config.server_cert_path == "/etc/rocketmq/server.crt" and config.client_enable is True
