"""What the client-side commands (admin_cmds, client_cmds) share: the ``--namesrv`` and ``--json`` options,
running one coroutine with errors as one line, aligned tables, times, and messages as text or JSON.

Bodies print as text when they are UTF-8 without control characters (tabs and new lines allowed), else as
base64; either is cut at :data:`BODY_PREVIEW_CHARS` unless the command was given ``--full-body``.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import select
import sys
from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import Any

from rocketstore.address_server import NAMESRV_DOMAIN_ENV
from rocketstore.client.admin import AdminClient
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError
from rocketstore.errors import RocketStoreError
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.tls import TlsConfig, use_client_tls
from rocketstore.remoting.transport import namesrv_addresses, run

__all__ = ["BODY_PREVIEW_CHARS", "DEFAULT_NAMESRV", "add_common", "apply_client_tls", "body_text", "broker_address",
           "credentials_of", "end_of_output", "fail", "format_time", "message_json", "namesrv_list",
           "offset_range", "parse_time_ms", "positive_int", "positive_seconds", "print_json", "print_message",
           "print_table", "run_command", "stdout_closed", "trim_names"]

DEFAULT_NAMESRV = "127.0.0.1:9876"
BODY_PREVIEW_CHARS = 256

#: the arguments that name a topic, group, cluster, broker, client, account, stat item or message (their
#: ``dest``): mqadmin trims each such option value (``getOptionValue(..).trim()``), and so do we
NAME_DESTS = frozenset({"topic", "group", "src_group", "dest_group", "consumer_group", "cluster", "broker",
                        "broker_name", "broker_name_option", "client", "msg_id", "id", "key", "trace_topic",
                        "account", "namespace", "stats_name"})


def trim_names(args: argparse.Namespace) -> None:
    """Strip the spaces around every name or id argument of *args* (:data:`NAME_DESTS`), as mqadmin does: a
    ``-t " TopicA "`` pasted with its spaces asks for TopicA."""
    for dest in NAME_DESTS:
        value = getattr(args, dest, None)
        if isinstance(value, str):
            setattr(args, dest, value.strip())


def add_common(parser: argparse.ArgumentParser, *, full_body: bool = False,
               json_help: str = "print JSON instead of a table") -> None:
    """``--namesrv`` (env ROCKETSTORE_NAMESRV, else NAMESRV_ADDR as mqadmin reads it, else the address server
    ROCKETMQ_NAMESRV_DOMAIN names as mqadmin run with -Drocketmq.namesrv.domain, default 127.0.0.1:9876),
    ``--json``, ``--timeout-s`` and the ACL keys ``--access-key`` / ``--secret-key`` (env ROCKETSTORE_ACCESS_KEY /
    ROCKETSTORE_SECRET_KEY)."""
    # None: the clients read the address server of ROCKETMQ_NAMESRV_DOMAIN (and its _SUBGROUP)
    fallback = None if os.environ.get(NAMESRV_DOMAIN_ENV, "").strip() else DEFAULT_NAMESRV
    namesrv_default = os.environ.get("ROCKETSTORE_NAMESRV", os.environ.get("NAMESRV_ADDR") or fallback)
    parser.add_argument("-n", "--namesrv", type=namesrv_list, default=namesrv_default,
                        help="name server(s) HOST:PORT[;HOST:PORT] (env ROCKETSTORE_NAMESRV, else NAMESRV_ADDR "
                             "as mqadmin's, else the address server $ROCKETMQ_NAMESRV_DOMAIN; default "
                             f"{DEFAULT_NAMESRV})")
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--request-timeout-s", type=positive_seconds, default=5.0, help="per request (default 5)")
    parser.add_argument("--access-key", default=os.environ.get("ROCKETSTORE_ACCESS_KEY"),
                        help="ACL access key to sign requests with (env ROCKETSTORE_ACCESS_KEY)")
    parser.add_argument("--secret-key", default=os.environ.get("ROCKETSTORE_SECRET_KEY"),
                        help="ACL secret key (env ROCKETSTORE_SECRET_KEY; prefer the variable to the flag)")
    parser.add_argument("--tls", action="store_true", help="connect over TLS (4.9.3's tls.enable=true)")
    parser.add_argument("--tls-config", metavar="FILE", default=os.environ.get("ROCKETSTORE_TLS_CONFIG"),
                        help="tls.properties with the client's settings (tls.client.authServer, "
                             "tls.client.trustCertPath, tls.client.certPath / keyPath); implies --tls "
                             "(env ROCKETSTORE_TLS_CONFIG)")
    if full_body:
        parser.add_argument("--full-body", action="store_true",
                            help=f"print whole bodies (default: the first {BODY_PREVIEW_CHARS} characters)")


def positive_seconds(text: str) -> float:
    """A time limit in seconds (argparse type): a finite number above 0.  Zero or a negative one would make
    every request fail with a puzzling "cannot connect ... within 0.0 s"."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def positive_int(text: str) -> int:
    """A count of at least 1 (argparse type): ``--max 0`` answering "no message with key ..." would be a lie."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text!r}")
    return value


def apply_client_tls(args: argparse.Namespace) -> None:
    """A client command's ``--tls`` / ``--tls-config``: every connection of this process over TLS."""
    path = getattr(args, "tls_config", None)
    if not getattr(args, "tls", False) and not path:
        return
    config = TlsConfig.from_file(path) if path else TlsConfig()
    use_client_tls(dataclasses.replace(config, client_enable=True))


def credentials_of(args: argparse.Namespace) -> SessionCredentials | None:
    """The ACL keys given to a command, None without them; ClientError when only one of the two is given."""
    access_key, secret_key = getattr(args, "access_key", None), getattr(args, "secret_key", None)
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        raise ClientError("ACL needs both --access-key and --secret-key")
    return SessionCredentials(access_key, secret_key)


def namesrv_list(text: str) -> str:
    """``HOST:PORT[;HOST:PORT...]`` checked (argparse type): a bad one is a usage error, not a traceback."""
    parts, bad = namesrv_addresses(text)
    if not parts:
        raise argparse.ArgumentTypeError("no name server address")
    if bad is not None:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {bad!r}")
    return ";".join(parts)


def broker_address(text: str) -> str:
    """A broker's ``HOST:PORT`` (argparse type for ``-b``): a broker name there, or a bad port, is a usage error
    saying what is wanted, not a traceback from the connection code."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r} (give the broker's address, e.g. "
                                         f"127.0.0.1:10911; `rocketstore cluster list` shows each broker's)")
    return text.strip()


def fail(message: str) -> int:
    print(f"rocketstore: error: {message}", file=sys.stderr)
    return 1


def stdout_closed() -> bool:
    """Whether stdout's reader has gone: a pipe whose reading end is closed (``| head`` has read its fill)
    polls as an error.  Tells a BrokenPipeError of stdout from one of a socket or another file."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # no descriptor (closed, or replaced in-process)
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def end_of_output() -> int:
    """Exit status 0 for a command whose stdout's reader has gone (``| head``): the end of the output, as a
    Unix tool takes it, and no traceback.  0, not SIGPIPE's 141: mqadmin (Java's PrintStream drops the write
    error) exits 0 too, and the command's work up to there stands (sent messages, consume's commits of what
    it printed), so a pipeline under ``set -o pipefail`` must not read it as a failure.  What stdout still
    buffers goes to /dev/null: its flush at exit would raise the error again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return 0


def run_command(coro: Coroutine[Any, Any, int]) -> int:
    """Run a command's coroutine; a RocketStoreError (no route, refused connection, broker error, bad name)
    or an OSError becomes one line on stderr and exit status 1, never a traceback; stdout's reader gone is
    the end of the output (:func:`end_of_output`)."""
    try:
        return run(coro)
    except BrokenPipeError as exc:
        if stdout_closed():
            return end_of_output()
        return fail(str(exc))
    except (TimeoutError, RocketStoreError, OSError) as exc:
        return fail(str(exc) or type(exc).__name__)


def offset_range(begin: int, end: int) -> str:
    """The queue offsets from *begin* up to *end* excluded as the commands print a range: both ends included
    (``0 .. 2`` for three messages), as ``message by-offset`` says what a queue holds; ``none`` for an empty
    one.  (--json keeps the end excluded, as mqadmin prints maxOffset: the offset the next message gets.)"""
    return f"{begin} .. {end - 1}" if begin < end else "none"


def format_time(ms: int) -> str:
    """Local time as mqadmin prints it (``yyyy-MM-dd HH:mm:ss``); ``-`` for none."""
    if ms <= 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


#: the form mqadmin's time options take besides epoch ms (UtilAll.YYYY_MM_DD_HH_MM_SS_SSS), local time, less
#: its last field: SimpleDateFormat reads SSS as a count of milliseconds ("5" is 5 ms), not as a fraction
MQADMIN_TIME_FORMAT = "%Y-%m-%d#%H:%M:%S"


def parse_time_ms(text: str | None, default: int) -> int:
    """Milliseconds since the epoch, an ISO 8601 time (local time when it has no zone), or mqadmin's
    ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time), which users of resetOffsetByTime / printMsgByQueue write."""
    if text is None:
        return default
    text = text.strip()
    try:
        # ASCII digits with at most one sign: isdigit() also passes "²" and "٣", which int() refuses or reads
        if text.removeprefix("-").isascii() and text.removeprefix("-").isdigit():
            return int(text)
        # mqadmin's form first: fromisoformat takes it too (any separator, ":" before a fraction), but reads
        # its SSS as a fraction of a second
        seconds, _, millis = text.rpartition(":")
        if millis.isascii() and millis.isdigit():
            try:
                return int(datetime.strptime(seconds, MQADMIN_TIME_FORMAT).timestamp()) * 1000 + int(millis)
            except ValueError:
                pass
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except (ValueError, OverflowError, OSError) as exc:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (ms since the epoch, ISO 8601 or "
                                         "yyyy-MM-dd#HH:mm:ss:SSS)") from exc


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, right: Sequence[int] = ()) -> None:
    """Columns padded to their widest cell; column indexes in *right* right-aligned (numbers)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for row in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        print("  ".join(parts).rstrip())


def print_json(obj: object) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2))


def body_text(body: bytes, full: bool) -> tuple[str, str, bool]:
    """(text, encoding "utf-8" or "base64", truncated)."""
    try:
        text = body.decode("utf-8")
        encoding = "utf-8" if all(c.isprintable() or c in "\n\t\r" for c in text) else "base64"
    except UnicodeDecodeError:
        encoding = "base64"
    if encoding == "base64":
        text = base64.b64encode(body).decode("ascii")
    truncated = not full and len(text) > BODY_PREVIEW_CHARS
    return (text[:BODY_PREVIEW_CHARS] if truncated else text), encoding, truncated


def message_json(m: StoredMessage, full_body: bool) -> dict[str, Any]:
    text, encoding, truncated = body_text(m.body, full_body)
    return {
        "topic": m.topic, "queueId": m.queue_id, "queueOffset": m.queue_offset,
        "commitLogOffset": m.commit_log_offset, "storeSize": m.store_size, "msgId": m.uniq_key or m.msg_id,
        "offsetMsgId": m.msg_id, "tags": m.tags, "keys": m.keys, "flag": m.flag, "sysFlag": m.sys_flag,
        "bornTimestamp": m.born_timestamp, "bornHost": str(m.born_host), "storeTimestamp": m.store_timestamp,
        "storeHost": str(m.store_host), "reconsumeTimes": m.reconsume_times,
        "properties": dict(sorted(m.properties.items())), "bodyLength": len(m.body), "bodyEncoding": encoding,
        "body": text, "bodyTruncated": truncated,
    }


def print_message(m: StoredMessage, full_body: bool) -> None:
    """One message as a block of ``Name: value`` lines, its properties and its body."""
    j = message_json(m, full_body)
    rows = [
        ("Topic", m.topic), ("Queue", f"{m.queue_id} @ offset {m.queue_offset}"),
        ("Msg ID", j["msgId"]), ("Offset Msg ID", m.msg_id), ("Tags", m.tags or "-"), ("Keys", m.keys or "-"),
        ("Born", f"{format_time(m.born_timestamp)} ({m.born_timestamp}) from {m.born_host}"),
        ("Stored", f"{format_time(m.store_timestamp)} ({m.store_timestamp}) on {m.store_host}"),
        ("Commitlog", f"offset {m.commit_log_offset}, {m.store_size} bytes"),
        ("Reconsume Times", m.reconsume_times), ("Flag / SysFlag", f"{m.flag} / {m.sys_flag}"),
    ]
    width = max(len(name) for name, _ in rows) + 1
    for name, value in rows:
        print(f"{(name + ':').ljust(width)} {value}")
    print("Properties:")
    for key, value in j["properties"].items():
        print(f"  {key}={value}")
    note = " (truncated, --full-body shows all)" if j["bodyTruncated"] else ""
    print(f"Body ({len(m.body)} bytes, {j['bodyEncoding']}){note}:")
    print("  " + j["body"].replace("\n", "\n  "))


def admin_of(args: argparse.Namespace) -> AdminClient:
    """The AdminClient a command's ``--namesrv``, ``--request-timeout-s`` and ACL keys describe."""
    return AdminClient(args.namesrv, timeout_s=args.request_timeout_s, credentials=credentials_of(args))


def add_targets(parser: argparse.ArgumentParser, *, brokers: str = "broker") -> None:
    """``-b HOST:PORT`` (one broker) or ``-c CLUSTER`` (every *brokers* of it, default every one the name
    server knows), then :func:`add_common`'s options."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-b", "--broker", type=broker_address, help="one broker, HOST:PORT")
    where.add_argument("-c", "--cluster", help=f"every {brokers} of this cluster (default: every {brokers})")
    add_common(parser)
