"""TLS on the remoting protocol, as RocketMQ 4.9.3 configures it (TlsSystemConfig / TlsHelper): the same
``tls.*`` property names, read from one properties file (4.9.3: system properties and
``/etc/rocketmq/tls.properties``).

Servers (name server, broker) run in one of three modes, ``tls.server.mode``:

* ``disabled``: plain connections only; a TLS handshake is closed;
* ``permissive``: both; a connection whose first byte is a TLS handshake record (0x16, which no remoting
  frame starts with below 352 MB) is served over TLS, any other in plain text (4.9.3's HandshakeHandler);
* ``enforcing``: TLS only; a plain connection is closed.

A server needs ``tls.server.certPath`` and ``tls.server.keyPath`` (PEM) for TLS, or 4.9.3's test mode,
``tls.test.mode.enable=true`` (off by default here, on by default in 4.9.3): a self-signed certificate made at
start (:mod:`rocketstore.remoting.self_signed`) instead of the configured one, a client certificate asked
for but not required (one presented is checked against the platform's trusted CAs).  Without either a
permissive server serves plain connections only, as 4.9.3's does without an SSL context.
``tls.server.need.client.auth`` (none, optional, require) asks clients for a certificate, checked against
``tls.server.trustCertPath``.

Clients use TLS when ``tls.enable`` is true (4.9.3's JVM-wide switch; here :func:`use_client_tls` for the
process, or a client's own ``tls=``); a broker's own connections when its config's ``tls.enable`` is true,
or is not given and ``tls.server.mode`` is enforcing (:meth:`TlsConfig.own_client_context`).  They check
the server's certificate chain against ``tls.client.trustCertPath`` only with ``tls.client.authServer``
true, and never its host name, as 4.9.3's client does; ``tls.client.certPath`` / ``tls.client.keyPath``
present a certificate of their own.  In test mode a client checks nothing and presents nothing, whatever
those say (4.9.3's test mode).
Sans-IO but for reading the files the settings name (and a test-mode server's temporary key files).
"""

from __future__ import annotations

import enum
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from rocketstore.errors import RocketStoreError, StoreConfigError
from rocketstore.message.java_properties import read_properties_file

__all__ = ["TLS_HANDSHAKE_BYTE", "ClientTls", "TlsConfig", "TlsConfigError", "TlsMode", "client_context_default",
           "client_ssl_context", "use_client_tls"]

#: the first byte of a TLS record carrying a handshake: a client hello starts with it
TLS_HANDSHAKE_BYTE = 0x16


class TlsConfigError(RocketStoreError):
    """A TLS setting that cannot be used (unknown mode, unreadable certificate or key)."""


class TlsMode(enum.Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


def _flag(props: Mapping[str, str], key: str) -> bool:
    """*key* as a boolean: "true" in any case is true; anything else, or no value, false."""
    value = props.get(key)
    return value is not None and value.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """The ``tls.*`` settings (4.9.3's names and defaults, but test mode)."""

    server_mode: TlsMode = TlsMode.PERMISSIVE
    server_cert_path: str | None = None
    server_key_path: str | None = None
    #: kept out of repr (a Spark source's options are printed in plans and logs)
    server_key_password: str | None = field(default=None, repr=False)
    #: none, optional or require
    server_need_client_auth: str = "none"
    server_trust_cert_path: str | None = None
    #: tls.enable; None: not given, which is false for a client but, for a broker's own connections, whether
    #: tls.server.mode is enforcing (:meth:`own_client_context`)
    client_enable: bool | None = None
    client_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = field(default=None, repr=False)
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None
    #: tls.test.mode.enable: a server's self-signed certificate made at start, clients that check nothing
    test_mode: bool = False

    def __post_init__(self) -> None:
        if self.server_need_client_auth not in _CLIENT_AUTH:
            raise TlsConfigError(f"tls.server.need.client.auth must be none, optional or require, not "
                                 f"{self.server_need_client_auth!r}")
        # a test-mode server uses none of these (as 4.9.3's): its notice at start names the ones set
        if self.server_need_client_auth != "none" and not self.server_trust_cert_path and not self.test_mode:
            raise TlsConfigError("tls.server.need.client.auth asks clients for a certificate: "
                                 "tls.server.trustCertPath must name the certificates that sign them")
        if bool(self.server_cert_path) != bool(self.server_key_path) and not self.test_mode:
            raise TlsConfigError("tls.server.certPath and tls.server.keyPath go together")
        if bool(self.client_cert_path) != bool(self.client_key_path) and not self.test_mode:
            raise TlsConfigError("tls.client.certPath and tls.client.keyPath go together")
        if self.server_mode is TlsMode.ENFORCING and not self.server_cert_path and not self.test_mode:
            raise TlsConfigError("tls.server.mode enforcing needs tls.server.certPath and tls.server.keyPath "
                                 "(or tls.test.mode.enable=true for a self-signed certificate made at start)")

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsConfig:
        """From ``tls.*`` properties (what is not given keeps its default)."""
        mode_text = props.get("tls.server.mode", "permissive").strip().lower()
        try:
            mode = TlsMode(mode_text)
        except ValueError:
            raise TlsConfigError(f"tls.server.mode must be disabled, permissive or enforcing, not {mode_text!r}") \
                from None

        def text(key: str) -> str | None:
            value = props.get(key)
            return value.strip() or None if value is not None else None

        return cls(server_mode=mode, server_cert_path=text("tls.server.certPath"),
                   server_key_path=text("tls.server.keyPath"), server_key_password=text("tls.server.keyPassword"),
                   server_need_client_auth=(props.get("tls.server.need.client.auth") or "none").strip().lower(),
                   server_trust_cert_path=text("tls.server.trustCertPath"),
                   client_enable=_flag(props, "tls.enable") if "tls.enable" in props else None,
                   client_cert_path=text("tls.client.certPath"),
                   client_key_path=text("tls.client.keyPath"), client_key_password=text("tls.client.keyPassword"),
                   client_auth_server=_flag(props, "tls.client.authServer"),
                   client_trust_cert_path=text("tls.client.trustCertPath"),
                   test_mode=_flag(props, "tls.test.mode.enable"))

    @classmethod
    def from_file(cls, path: str) -> TlsConfig:
        """From a tls.properties file (Java properties), read as broker.conf is (read_properties_file: UTF-8,
        a leading byte order mark skipped; a file that is not UTF-8 is TlsConfigError naming the byte, not a
        UnicodeDecodeError's traceback)."""
        try:
            props = read_properties_file(path)
        except OSError as exc:
            raise TlsConfigError(f"cannot read the TLS config {path}: {exc}") from exc
        except StoreConfigError as exc:
            raise TlsConfigError(f"the TLS config: {exc}") from exc
        return cls.from_properties(props)

    @property
    def server_tls(self) -> bool:
        """Whether a server serves TLS connections at all (a mode that allows them and a certificate, or
        test mode)."""
        return self.server_mode is not TlsMode.DISABLED and (self.server_cert_path is not None or self.test_mode)

    def test_mode_notice(self) -> str:
        """What a server in test mode logs at start (a warning: nobody can check who it is)."""
        ignored = [name for name, value in (("tls.server.certPath", self.server_cert_path),
                                            ("tls.server.need.client.auth", self.server_need_client_auth != "none"),
                                            ("tls.client.certPath", self.client_cert_path))
                   if value]
        unused = f" ({' and '.join(ignored)} not used in test mode)" if ignored else ""
        return ("tls.test.mode.enable=true: serving TLS with a self-signed certificate made at start; clients "
                f"cannot tell this server from another{unused}")

    def server_context(self) -> ssl.SSLContext:
        """The server side's context (the certificate, and client certificates asked for as configured; in
        test mode a certificate made now, a client certificate asked for optionally)."""
        if self.test_mode:
            return _test_mode_server_context()
        if not self.server_cert_path or not self.server_key_path:
            raise TlsConfigError("a TLS server needs tls.server.certPath and tls.server.keyPath")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _load_chain(ctx, self.server_cert_path, self.server_key_path, self.server_key_password, "tls.server")
        ctx.verify_mode = _CLIENT_AUTH[self.server_need_client_auth]
        if self.server_trust_cert_path:
            _load_trust(ctx, self.server_trust_cert_path, "tls.server.trustCertPath")
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """The client side's context: the server's chain checked only with authServer, never its name."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        if self.test_mode:  # 4.9.3: trusts any server and presents no certificate, whatever else is set
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        if self.client_auth_server:
            ctx.verify_mode = ssl.CERT_REQUIRED
            if self.client_trust_cert_path:
                _load_trust(ctx, self.client_trust_cert_path, "tls.client.trustCertPath")
            else:
                ctx.load_default_certs()
        else:
            ctx.verify_mode = ssl.CERT_NONE
        if self.client_cert_path and self.client_key_path:
            _load_chain(ctx, self.client_cert_path, self.client_key_path, self.client_key_password, "tls.client")
        return ctx

    def own_client_context(self) -> ssl.SSLContext | None:
        """The context of the connections a broker built with these settings opens itself (registration with
        the name servers, a slave's calls to its master); None: plain.  4.9.3's BrokerStartup sets the
        broker's NettyClientConfig.useTLS from ``tls.enable``, true by default when tls.server.mode is
        enforcing."""
        enable = self.client_enable
        if enable is None:
            enable = self.server_mode is TlsMode.ENFORCING
        return self.client_context() if enable else None


def _load_chain(ctx: ssl.SSLContext, cert: str, key: str, password: str | None, prefix: str) -> None:
    def no_password() -> str:
        # without it OpenSSL would prompt for a pass phrase on the terminal, holding the start
        raise TlsConfigError(f"{prefix}.keyPath {key} is encrypted: {prefix}.keyPassword must give its password")

    try:
        ctx.load_cert_chain(cert, key, password if password is not None else no_password)
    except ssl.SSLError as exc:
        hint = f" (is {prefix}.keyPassword right?)" if password is not None else ""
        raise TlsConfigError(f"cannot load {prefix}.certPath {cert} / {prefix}.keyPath {key}: {exc}{hint}") \
            from exc
    except OSError as exc:
        raise TlsConfigError(f"cannot load {prefix}.certPath {cert} / {prefix}.keyPath {key}: {exc}") from exc


def _test_mode_server_context() -> ssl.SSLContext:
    """A server context with a self-signed certificate made now (ssl loads a key from a file only: it is
    written to a private temporary directory and removed as soon as it is loaded)."""
    from rocketstore.remoting.self_signed import make_self_signed

    now = datetime.now(UTC).replace(microsecond=0)
    made = make_self_signed("rocketstore-test-mode", now - timedelta(days=1), timedelta(days=3650))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="rocketstore-tls-") as directory:  # mode 0700
        cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
        with open(cert, "wb") as f:
            f.write(made.cert_pem)
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(made.key_pem)
        ctx.load_cert_chain(cert, key)
    # 4.9.3's test mode asks for a client certificate optionally (ClientAuth.OPTIONAL) and, with no trust
    # manager set, checks one presented against the platform's trusted CAs: a client presenting none is
    # served, one presenting a certificate no such CA signed is refused at the handshake
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    return ctx


def _load_trust(ctx: ssl.SSLContext, path: str, key: str) -> None:
    try:
        ctx.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load {key} {path}: {exc}") from exc


_client_context: ssl.SSLContext | None = None


def use_client_tls(config: TlsConfig | ssl.SSLContext | None) -> None:
    """Make every connection pool of this process that is not given a context of its own connect over TLS
    (4.9.3's ``-Dtls.enable=true``): with a TlsConfig whose ``tls.enable`` is true, or a ready context;
    None (or ``tls.enable`` false) goes back to plain connections.  Pools read it when they connect."""
    global _client_context
    if isinstance(config, TlsConfig):
        _client_context = config.client_context() if config.client_enable else None
    else:
        _client_context = config


def client_context_default() -> ssl.SSLContext | None:
    """The process's client context (:func:`use_client_tls`); None: plain connections."""
    return _client_context


#: A client's own TLS switch (4.9.3's ClientConfig.useTLS, per client; ``tls=`` of every client): None
#: follows the process (:func:`use_client_tls`, 4.9.3's default from ``tls.enable``), False is plain, True is
#: TLS with the default client settings (the server's certificate not checked), a TlsConfig is TLS with its
#: ``tls.client.*`` settings when its ``tls.enable`` is true and plain when it is false, a context is used as
#: it is.
ClientTls = TlsConfig | ssl.SSLContext | bool | None


def client_ssl_context(tls: ClientTls) -> ssl.SSLContext | None | Literal["process"]:
    """What a client's ``tls=`` means for its connection pool: a context, None (plain) or ``"process"`` (the
    process's choice when a connection is made).  A TlsConfig's files are read here, so a bad one fails
    the client's construction with TlsConfigError."""
    if tls is None:
        return "process"
    if tls is True:
        return TlsConfig(client_enable=True).client_context()
    if tls is False:
        return None
    if isinstance(tls, TlsConfig):
        return tls.client_context() if tls.client_enable else None
    if isinstance(tls, ssl.SSLContext):
        return tls
    raise TypeError(f"tls must be None, a bool, a TlsConfig or an ssl.SSLContext, not {type(tls).__name__}")
