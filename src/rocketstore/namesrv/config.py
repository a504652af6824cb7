"""NamesrvConfig: a name server's settings with RocketMQ 4.9.3's names and defaults, and where its two
files live.

``kvConfigPath`` (default ``~/namesrv/kvConfig.json``) holds the KV table (PUT_KV_CONFIG, e.g.
ORDER_TOPIC_CONFIG) as ``{"configTable": {namespace: {key: value}}}``, rewritten after every change and read
at start.  ``configStorePath`` (default ``~/namesrv/namesrv.properties``) receives every setting after an
UPDATE_NAMESRV_CONFIG, as 4.9.3's Configuration.persist writes them.  A namesrv.conf (``rocketstore namesrv
-c FILE``) may set any of them, ``listenPort`` and the NettyServerConfig settings 4.9.3's name server shows
(serverWorkerThreads, ...: remoting.netty_config, kept, shown, changed and written without effect, as the
broker keeps them); its other names are kept as text the same way.  An update naming a setting that
neither the name server nor its file has is refused (4.9.3 answers SUCCESS and drops it: a typo there goes
unnoticed).  As in 4.9.3, the FILE itself is then the configStorePath.  rocketmqHome is $ROCKETMQ_HOME,
left out (as 4.9.3 leaves out a null) when that is unset.

Pure (the files are written by the name server with rocketstore.files).  Imports message and
remoting.netty_config only.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from rocketstore.message.java_numbers import java_value
from rocketstore.message.java_properties import format_properties
from rocketstore.remoting.netty_config import NETTY_SERVER_KEPT

__all__ = ["FIXED_AT_RUN_TIME", "NamesrvConfig", "NamesrvConfigError"]


class NamesrvConfigError(ValueError):
    """A setting the name server does not have, one that may not change at run time, or a bad value."""


def _home_file(name: str) -> str:
    return os.path.join(os.path.expanduser("~"), "namesrv", name)


#: Java name -> field name, in NamesrvConfig's order, then NettyServerConfig's listenPort
_NAMES = {
    "rocketmqHome": "rocketmq_home",
    "kvConfigPath": "kv_config_path",
    "configStorePath": "config_store_path",
    "productEnvName": "product_env_name",
    "clusterTest": "cluster_test",
    "orderMessageEnable": "order_message_enable",
    "listenPort": "listen_port",
}
#: settings UPDATE_NAMESRV_CONFIG may not change: the paths would let any client choose where the name server
#: writes files (4.9.3 allowed it; later releases refuse it, CVE-2023-37582), and the port is bound already
FIXED_AT_RUN_TIME = frozenset({"kvConfigPath", "configStorePath", "listenPort"})
#: NettyServerConfig's settings the name server keeps without effect: name -> (Java kind, 4.9.3's default)
KEPT_NETTY = {**NETTY_SERVER_KEPT, "serverChannelMaxIdleTimeSeconds": ("int", "120")}


@dataclass(frozen=True, slots=True)
class NamesrvConfig:
    #: None (not shown, as 4.9.3 shows no null) when ROCKETMQ_HOME is unset
    rocketmq_home: str | None = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME"))
    kv_config_path: str = field(default_factory=lambda: _home_file("kvConfig.json"))
    config_store_path: str = field(default_factory=lambda: _home_file("namesrv.properties"))
    product_env_name: str = "center"
    cluster_test: bool = False
    #: registrations are answered with the ORDER_TOPIC_CONFIG namespace of the KV table
    order_message_enable: bool = False
    listen_port: int = 9876
    #: KEPT_NETTY's settings as text (4.9.3's defaults, then the file's and the updates' values), in its order
    netty: tuple[tuple[str, str], ...] = tuple((name, default) for name, (_, default) in KEPT_NETTY.items())
    #: the namesrv.conf's other settings (names the name server does not have), as text in the file's order:
    #: shown and written back with the others, as 4.9.3's Configuration keeps every property of its -c file
    #: (an UPDATE_NAMESRV_CONFIG that dropped them erased the user's lines from that file)
    extra: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_properties(cls, props: dict[str, str], base: NamesrvConfig | None = None, *,
                        strict: bool = False) -> NamesrvConfig:
        """*base* (default: the defaults) with the settings *props* names; NamesrvConfigError on a value that
        does not convert, and with *strict* on a name the name server does not have and *base* does not keep
        (a namesrv.conf's other names, NettyClientConfig's say, are kept as text in ``extra``: 4.9.3 applies
        only names it knows, and keeps the others to show and write back)."""
        base = base or cls()
        changes: dict[str, object] = {}
        netty = dict(base.netty)
        extra = dict(base.extra)
        for name, raw in props.items():
            attr = _NAMES.get(name)
            if attr is None and name in KEPT_NETTY:
                netty[name] = _netty_value(name, raw)
                continue
            if attr is None:
                if strict and name not in extra:
                    raise NamesrvConfigError(f"the name server has no setting {name!r}")
                extra[name] = raw
                continue
            current = getattr(base, attr)
            text = raw.strip()
            if isinstance(current, bool):
                if text.lower() not in ("true", "false"):
                    raise NamesrvConfigError(f"{name}={raw!r}: not true or false")
                changes[attr] = text.lower() == "true"
            elif isinstance(current, int):
                try:
                    changes[attr] = int(text)
                except ValueError:
                    raise NamesrvConfigError(f"{name}={raw!r}: not an integer") from None
                if attr == "listen_port" and not 0 <= int(text) <= 0xFFFF:
                    raise NamesrvConfigError(f"{name}={raw!r}: not a port")
            else:
                changes[attr] = text
        if netty != dict(base.netty):
            changes["netty"] = tuple(netty.items())
        if extra != dict(base.extra):
            changes["extra"] = tuple(extra.items())
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]

    def updated(self, props: dict[str, str]) -> NamesrvConfig:
        """UPDATE_NAMESRV_CONFIG: :meth:`from_properties` over this config, refusing FIXED_AT_RUN_TIME."""
        fixed = sorted(FIXED_AT_RUN_TIME.intersection(props))
        if fixed:
            raise NamesrvConfigError(f"{', '.join(fixed)} cannot be changed at run time")
        return NamesrvConfig.from_properties(props, self, strict=True)

    def to_properties(self) -> str:
        """Every setting as properties text (GET_NAMESRV_CONFIG's body, the configStorePath file)."""
        own = ((name, getattr(self, attr)) for name, attr in _NAMES.items())
        return format_properties([*((name, value) for name, value in own if value is not None), *self.netty,
                                  *self.extra])


def _netty_value(name: str, raw: str) -> str:
    """*raw* as the setter of KEPT_NETTY's *name* takes it (Integer.parseInt, Boolean.parseBoolean), as text;
    NamesrvConfigError where 4.9.3's conversion throws (it then keeps the old value without a word)."""
    text = java_value(KEPT_NETTY[name][0], raw)
    if text is None:
        raise NamesrvConfigError(f"{name}={raw!r}: not an integer")
    return text

