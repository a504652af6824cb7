"""``serve``, ``namesrv`` and ``broker`` commands: run a name server and/or a broker until SIGINT/SIGTERM.

    rocketstore serve [--store DIR] [--namesrv-port 9876] [--broker-port 10911] [-c broker.conf] [--host H]
                      [--busy-poll-us N] [--metrics-port PORT] [--tls-config tls.properties] [-v]
    rocketstore namesrv [-c namesrv.conf] [--port 9876] [--host H] [--tls-config tls.properties]
    rocketstore broker -c broker.conf [--store DIR] [--port P] [-n host:port] [--host H] [--tls-config ...]

``serve`` keeps the name server's KV table and settings under ``<store>/namesrv/``; ``namesrv`` where its
namesrv.conf says (RocketMQ's default: ``~/namesrv/``).  Port 0 picks a free port; each command prints one line saying where it listens, then serves until
interrupted and closes the store cleanly.  ``add_serve_commands(subparsers)`` (alias ``register``, the
cli.main convention) wires the commands into the main parser, setting ``handler`` (and ``func``) to a
function of the parsed namespace returning the exit status; ``python -m rocketstore.cli.serve_cmds ...``
runs them on their own.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import errno
import logging
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from rocketstore.broker import Broker, load_broker_conf
from rocketstore.cli.output import namesrv_list
from rocketstore.client.admin import AdminClient
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.exporter import MetricsServer
from rocketstore.errors import RocketStoreError, StoreConfigError
from rocketstore.message.java_properties import read_properties_file
from rocketstore.namesrv import NameServer, NamesrvConfig, NamesrvConfigError
from rocketstore.remoting.tls import TlsConfig, TlsConfigError, use_client_tls
from rocketstore.remoting.transport import run

__all__ = ["add_serve_commands", "main", "serve", "serve_broker", "serve_namesrv"]


_BUSY_HELP = ("keep the event loop polling N µs after each read or write instead of sleeping: faster round "
              "trips for a busy core (overrides busyPollMicros; default 0, off)")


class BrokerConfError(RocketStoreError):
    """A broker.conf setting the broker cannot start with."""


def listen_port(text: str) -> int:
    """A port to listen on (argparse type): 0 (pick one) to 65535.  Checked here: the event loop would
    otherwise keep only the low 16 bits of a larger number and listen somewhere else without a word."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not in 0..65535")
    return port


#: serve's own warnings (a broker.conf key it does not use, the metrics exporter's ACL account)
log = logging.getLogger("rocketstore.serve")

def _metrics_credentials(broker_cfg: Any) -> SessionCredentials | None:
    """The ACL account ``serve --metrics-port``'s exporter signs with: ROCKETSTORE_ACCESS_KEY /
    ROCKETSTORE_SECRET_KEY, as ``rocketstore exporter`` and the client commands read them.  With
    aclEnable=true and no account, the broker refuses the exporter's admin requests (every scrape nearly
    empty): a warning says so once, at start."""
    access_key = os.environ.get("ROCKETSTORE_ACCESS_KEY", "").strip()
    secret_key = os.environ.get("ROCKETSTORE_SECRET_KEY", "").strip()
    if access_key and secret_key:
        return SessionCredentials(access_key, secret_key)
    if access_key or secret_key:  # (as the client commands refuse a half-given pair)
        log.warning(
            "only one of ROCKETSTORE_ACCESS_KEY / ROCKETSTORE_SECRET_KEY is set: --metrics-port's exporter "
            "signs nothing")
    elif broker_cfg.acl_enable:
        log.warning(
            "aclEnable=true: --metrics-port's exporter signs no request, so the broker refuses what it asks; "
            "set ROCKETSTORE_ACCESS_KEY and ROCKETSTORE_SECRET_KEY to an account of plain_acl.yml")
    return None


def add_serve_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("serve", help="run a name server and a broker in one process on a local store")
    p.add_argument("--store", default=None, help="store directory (default: storePathRootDir or ./store)")
    p.add_argument("--namesrv-port", type=listen_port, default=9876, help="name server port (0: pick one; default 9876)")
    p.add_argument("--broker-port", type=listen_port, default=None,
                   help="broker port (0: pick one; default: listenPort or 10911)")
    p.add_argument("-c", "--config", default=None, help="broker.conf (Java properties)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on and to advertise (127.0.0.1); 0.0.0.0 or :: (IPv6 and IPv4) "
                        "listen on every interface and advertise this host's address")
    p.add_argument("--busy-poll-us", type=int, default=None, metavar="N", help=_BUSY_HELP)
    p.add_argument("--metrics-port", type=listen_port, default=None, metavar="PORT",
                   help="also serve Prometheus metrics (rocketmq-exporter's names) on http://HOST:PORT/metrics")
    _add_tls(p)
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    p.set_defaults(func=_cmd_serve, handler=_cmd_serve)

    n = subparsers.add_parser("namesrv", help="run a name server")
    n.add_argument("-p", "--port", type=listen_port, default=None,
                   help="port (0: pick one; default: listenPort of the config, else 9876)")
    n.add_argument("-c", "--config", default=None,
                   help="namesrv.conf (Java properties: kvConfigPath, configStorePath, orderMessageEnable, listenPort, ...)")
    n.add_argument("--host", default="127.0.0.1", help="interface to listen on (127.0.0.1)")
    _add_tls(n)
    n.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    n.set_defaults(func=_cmd_namesrv, handler=_cmd_namesrv)

    b = subparsers.add_parser("broker", help="run a broker that registers with name servers")
    b.add_argument("-c", "--config", required=True, help="broker.conf (Java properties)")
    b.add_argument("--store", default=None, help="store directory (overrides storePathRootDir; without either "
                                                 "./store, where 4.9.3 uses ~/store)")
    b.add_argument("-p", "--port", type=listen_port, default=None, help="listen port (overrides listenPort; 0: pick one)")
    b.add_argument("-n", "--namesrv", type=namesrv_list, default=None,
                   help="name server address(es) host:port;host:port (default: namesrvAddr of the file, else "
                        "env NAMESRV_ADDR, as mqbroker)")
    b.add_argument("--host", default=None,
                   help="interface to listen on (default: brokerIP1 or 127.0.0.1); :: listens on IPv6 and IPv4")
    b.add_argument("--busy-poll-us", type=int, default=None, metavar="N", help=_BUSY_HELP)
    _add_tls(b)
    b.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    b.set_defaults(func=_cmd_broker, handler=_cmd_broker)


register = add_serve_commands


def _add_tls(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tls-config", metavar="FILE", default=None,
                        help="tls.properties (4.9.3's tls.* settings: tls.server.mode, tls.server.certPath, "
                             "tls.server.keyPath, tls.enable, tls.test.mode.enable, ...; see docs/tls.md)")


def _tls(path: str | None) -> TlsConfig | None:
    """The TLS settings of ``--tls-config``; with ``tls.enable=true`` the process's client connections use
    TLS too (a broker's own connections follow the settings it is given: Broker(tls=...))."""
    if path is None:
        return None
    config = TlsConfig.from_file(path)
    use_client_tls(config)
    return config


def _overrides(**values: object) -> dict[str, str]:
    return {k: str(v) for k, v in values.items() if v is not None}


def _stop_on_signal() -> asyncio.Event:
    """An event SIGINT/SIGTERM set from now on.  Taken before the "listening" line is printed: a SIGTERM
    sent as soon as that line is read (a supervisor, a script) killed the process with the default action,
    skipping the clean close, and the next start recovered the store as after a crash (abort file)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread / platform without signals
            pass
    return stop


def _advertisable(host: str) -> str | None:
    """*host* as brokerIP1, or None (the broker then advertises this host's address, 4.9.3's brokerIP1
    default) for a wildcard that no client could connect to."""
    return None if host in ("", "0.0.0.0", "::") else host


def _print(line: str) -> None:
    print(line, flush=True)


async def serve(store: str | None, namesrv_port: int, broker_port: int | None, config: str | None,
                host: str, busy_poll_us: int | None = None, *, tls: TlsConfig | None = None,
                metrics_port: int | None = None) -> None:
    # the name server keeps its KV table and settings beside the store: <store>/namesrv/
    root = store or (read_properties_file(config).get("storePathRootDir") if config else None) or "./store"
    if os.path.exists(root) and not os.path.isdir(root):  # said as the broker says it, before the name
        # server's files under it fail as "[Errno 20] Not a directory: '<root>/namesrv/kvConfig.json'"
        raise StoreConfigError(f"storePathRootDir {root} is not a directory")
    namesrv = NameServer(NamesrvConfig(kv_config_path=os.path.join(root, "namesrv", "kvConfig.json"),
                                       config_store_path=os.path.join(root, "namesrv", "namesrv.properties"),
                                       listen_port=namesrv_port), tls=tls)
    await namesrv.start(host, namesrv_port)
    broker = None
    metrics: MetricsServer | None = None
    try:
        overrides = _overrides(listenPort=broker_port, namesrvAddr=f"{host}:{namesrv.port}",
                               busyPollMicros=busy_poll_us)
        if store is not None:
            overrides["storePathRootDir"] = store
        file_namesrv = read_properties_file(config).get("namesrvAddr", "").strip() if config else ""
        if file_namesrv and file_namesrv != overrides["namesrvAddr"]:
            # a production broker.conf reused: say which name server the broker registers with
            log.warning(
                "namesrvAddr=%s in %s is not used: serve registers its broker with its own name server (%s); "
                "`rocketstore broker -c %s` registers with the file's", file_namesrv, config,
                overrides["namesrvAddr"], config)
        broker_cfg, store_cfg, props = load_broker_conf(config, store_dir="./store", overrides=overrides)
        broker_cfg = broker_cfg.replace(listen_host=host, broker_ip1=props.get("brokerIP1", _advertisable(host)))
        broker = Broker(broker_cfg, store_cfg, config_path=config, tls=tls, properties=props)
        await broker.start()
        if metrics_port is not None:
            metrics = MetricsServer(AdminClient(namesrv.address, credentials=_metrics_credentials(broker_cfg)),
                                    host=host, port=metrics_port)
            await metrics.start()
        stop = _stop_on_signal()
        _print(f"name server listening on {namesrv.address}; broker {broker_cfg.broker_name} listening on "
               f"{broker.address} (store {broker.store_config.store_path_root_dir})"
               + (f"; metrics on http://{f'[{host}]' if ':' in host else host}:{metrics.port}/metrics"
                  if metrics is not None else ""))
        await stop.wait()
    finally:
        if metrics is not None:
            await metrics.close()
            await metrics.admin.close()
        if broker is not None:
            await broker.close()
        await namesrv.close()


def namesrv_config_of(config: str | None, port: int | None = None) -> NamesrvConfig:
    """The settings of ``rocketstore namesrv -c CONFIG [-p PORT]``.  As 4.9.3's NamesrvStartup, the file
    given with -c is the configStorePath too (whatever it says): UPDATE_NAMESRV_CONFIG rewrites it, so a
    setting changed at run time (mqadmin updateNamesrvConfig) is still there when the name server restarts
    with the same file; written to ~/namesrv/namesrv.properties, which nothing reads, it was lost."""
    if not config:
        namesrv_config = NamesrvConfig.from_properties({})
    else:
        namesrv_config = dataclasses.replace(NamesrvConfig.from_properties(read_properties_file(config)),
                                             config_store_path=config)
    if port is not None:
        namesrv_config = dataclasses.replace(namesrv_config, listen_port=port)
    return namesrv_config


async def serve_namesrv(port: int | None, host: str, config: str | None = None, tls: TlsConfig | None = None) -> None:
    """A name server with the settings of *config* (a namesrv.conf; default: RocketMQ's, its files under
    ~/namesrv), listening on *port* (default: the file's listenPort, else 9876)."""
    namesrv_config = namesrv_config_of(config, port)
    namesrv = NameServer(namesrv_config, tls=tls)
    await namesrv.start(host, namesrv_config.listen_port)
    try:
        stop = _stop_on_signal()
        _print(f"name server listening on {namesrv.address}")
        await stop.wait()
    finally:
        await namesrv.close()


async def serve_broker(config: str, store: str | None, port: int | None, namesrv: str | None,
                       host: str | None, busy_poll_us: int | None = None, tls: TlsConfig | None = None) -> None:
    overrides = _overrides(listenPort=port, namesrvAddr=namesrv, storePathRootDir=store,
                           busyPollMicros=busy_poll_us)
    source = f"namesrvAddr in {config}"
    if namesrv is None and os.environ.get("NAMESRV_ADDR") and "namesrvAddr" not in read_properties_file(config):
        # neither -n nor the file: 4.9.3's BrokerConfig.namesrvAddr defaults to the environment's NAMESRV_ADDR
        # (decided before the file is loaded: loaded twice, its warnings were logged twice)
        source, overrides["namesrvAddr"] = "NAMESRV_ADDR", os.environ["NAMESRV_ADDR"]
    broker_cfg, store_cfg, props = load_broker_conf(config, store_dir="./store", overrides=overrides)
    if broker_cfg.namesrv_addrs:
        try:
            namesrv_list(";".join(broker_cfg.namesrv_addrs))
        except argparse.ArgumentTypeError as exc:  # a bad namesrvAddr in the file: one line, not a traceback
            raise BrokerConfError(f"{source}: {exc}") from None
    listen_host = host or props.get("brokerIP1") or "127.0.0.1"
    broker_cfg = broker_cfg.replace(listen_host=listen_host,
                                    broker_ip1=props.get("brokerIP1", _advertisable(listen_host)))
    broker = Broker(broker_cfg, store_cfg, config_path=config, tls=tls, properties=props)
    await broker.start()
    try:
        stop = _stop_on_signal()
        registrar = broker.registrar
        namesrvs = ";".join(registrar.namesrv_addrs if registrar else broker_cfg.namesrv_addrs) or "none"
        if broker.address_server is not None:  # fetchNamesrvAddrByAddressServer
            namesrvs += f" from {broker.address_server.url}"
        _print(f"broker {broker_cfg.broker_name} listening on {broker.address} "
               f"(store {broker.store_config.store_path_root_dir}; name servers {namesrvs})")
        await stop.wait()
    finally:
        await broker.close()


def _setup_logging(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _run_listening(server: Coroutine[Any, Any, None], port_options: str) -> None:
    """run(*server*); a port some other process holds is said with what to do about it (the bare bind
    error names the address only, and the newcomer's usual cause is a server left running)."""
    try:
        run(server)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise OSError(exc.errno, f"{exc.strerror}: another process (a rocketstore or RocketMQ server "
                                 f"still running?) listens there; stop it or choose another port with "
                                 f"{port_options} (0 picks a free one)") from None


def _cmd_serve(args: argparse.Namespace) -> int:
    _setup_logging(args)
    port_options = "--namesrv-port / --broker-port" + (
        " / --metrics-port" if args.metrics_port is not None else "")
    _run_listening(serve(args.store, args.namesrv_port, args.broker_port, args.config, args.host,
                         args.busy_poll_us, tls=_tls(args.tls_config), metrics_port=args.metrics_port),
                   port_options)
    return 0


def _cmd_namesrv(args: argparse.Namespace) -> int:
    _setup_logging(args)
    try:
        _run_listening(serve_namesrv(args.port, args.host, args.config, _tls(args.tls_config)), "--port")
    except (OSError, NamesrvConfigError, TlsConfigError) as exc:  # exit 2, as broker and serve
        print(f"rocketstore: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_broker(args: argparse.Namespace) -> int:
    _setup_logging(args)
    _run_listening(serve_broker(args.config, args.store, args.port, args.namesrv, args.host,
                                args.busy_poll_us, _tls(args.tls_config)), "--port")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rocketstore", description="rocketstore name server / broker")
    add_serve_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
