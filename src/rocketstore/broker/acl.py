"""Plain ACL, as RocketMQ 4.9.3's PlainAccessValidator checks it (shared/spec/acl.md): accounts and white
address lists from YAML files, and the check a broker with ``aclEnable=true`` runs on every request before
its handler.

Files: ``<rocketmqHome>/conf/acl/**/*.yml|*.yaml`` (sorted by path) and then ``<rocketmqHome>/conf/
plain_acl.yml``; an access key defined in two files is taken from the first.  They are re-read when one of
them changes, appears or goes: a broker runs :meth:`PlainAcl.start_watch`, a thread that looks at them every
second whether requests come or not (4.9.3's AclFileWatchService looks every 5 s and compares only each file's
lastModified; here its size, mtime and the MD5 of its bytes are compared, so a rewrite that keeps the
timestamp is seen too).  Without a watch, :meth:`PlainAcl.check` looks at most once a second.  A file that no
longer loads leaves the last good configuration in force, logged.

The check (:meth:`PlainAcl.check`): a peer address matching a global white pattern passes; otherwise the
request needs an AccessKey the files know, passes if the peer matches that account's white pattern, else
needs the HMAC-SHA1 signature of its fields and body under the account's secret, then the permissions its
request code needs (PUB on the topic of a send, SUB on the topic and the ``%RETRY%<group>`` of a pull, ...;
admin-only codes need ``admin: true``).  A failure is answered as the Java broker answers its AclException:
SYSTEM_ERROR with the exception in the remark.

The name server has no ACL, as in 4.9.3.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketstore.errors import RocketStoreError
from rocketstore.message.java_numbers import parse_java_int
from rocketstore.message.java_text import java_is_blank, java_trim
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX
from rocketstore.remoting.acl_signing import ACCESS_KEY, SIGNATURE, sign, signing_content
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode

__all__ = ["AclConfigError", "PlainAcl", "account_fields", "acl_files", "address_matcher", "check_acl_data",
           "check_permission", "java_boolean", "java_trim", "load_acl_files", "parse_perm"]

log = logging.getLogger(__name__)

DENY, ANY, PUB, SUB = 1, 2, 4, 8
#: what a failed check's remark starts with (the Java broker's AclException, as the clients print it)
ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
#: request codes only an admin account may use (Permission.ADMIN_CODE)
ADMIN_CODES = frozenset({RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_BROKER_CONFIG,
                         RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                         RequestCode.DELETE_SUBSCRIPTIONGROUP})
_PERMS = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}
_RELOAD_CHECK_S = 1.0


class AclConfigError(RocketStoreError):
    """An ACL file that cannot be used (as the Java broker's AclException at load)."""


def parse_perm(text: object) -> int:
    """``PUB``, ``SUB``, ``PUB|SUB`` / ``SUB|PUB`` or ``DENY``; anything else (or nothing) is DENY."""
    return _PERMS.get(java_trim(str(text)), DENY) if text is not None else DENY


def check_permission(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


# --- white address patterns --------------------------------------------------------------------------------


def _never(_ip: str) -> bool:
    return False


def _always(_ip: str) -> bool:
    return True


_IPV4 = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})")
def _valid_ipv4(text: str) -> bool:
    """commons-validator's isValidInet4Address: four decimal octets up to 255, none with a leading zero."""
    m = _IPV4.fullmatch(text)
    return m is not None and all(int(g) <= 255 and not (len(g) > 1 and g[0] == "0") for g in m.groups())


def _valid_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _java_int(text: str, refused: AclConfigError) -> int:
    """Integer.parseInt: *refused* for what it throws NumberFormatException on."""
    try:
        return parse_java_int(text)
    except ValueError:
        raise refused from None


def _ipv4_range(text: str, pattern: str | None) -> Callable[[str], bool]:
    """RangeRemoteAddressStrategy for an IPv4 pattern, as 4.9.3 reads it: the range is the first of the
    2nd, 3rd and 4th octets that is ``*`` or ``lo-hi`` (decimal, within 0..255); the pattern must have
    four octets, and the octets before the range are its fixed head; octets after the range are not
    looked at (``192.168.1-5.7`` lets 192.168.3.99 in).  What 4.9.3 refuses at load is refused here:
    fewer than four octets (``192.168.*``), a bound that is no number, out of range or reversed, a
    non-number among the head octets but the last.  A pattern with no range past its first octet
    (``*.0.0.1``) loads in 4.9.3 but fails every check it is asked with a NullPointerException; it is
    refused here too."""
    refused = AclConfigError(f"white address pattern {pattern!r} is not one RocketMQ accepts")
    parts = [p for p in text.split(".") if p]
    lo = hi = index = 0
    for index in (1, 2, 3):
        if index >= len(parts):
            raise refused
        value = java_trim(parts[index])
        if value == "*":
            lo, hi = 0, 255
        elif "-" in value:
            bounds = [b for b in value.split("-") if b]
            if value.startswith("-") or len(bounds) < 2:
                raise refused
            lo, hi = _java_int(bounds[0], refused), _java_int(bounds[1], refused)
            if not 0 <= lo <= hi <= 255:
                raise refused
        if hi > 0:
            break
    else:
        raise refused
    if len(parts) != 4 or not all(0 <= _java_int(java_trim(p), refused) <= 255
                                  for p in parts[:index - 1]):
        raise refused
    head = [java_trim(p) for p in parts[:index]]

    def in_range(ip: str) -> bool:
        ip = ip.strip()
        octets = ip.split(".")
        return _valid_ipv4(ip) and octets[:index] == head and lo <= int(octets[index]) <= hi

    return in_range


def _exact(addresses: Iterable[str], pattern: str | None) -> Callable[[str], bool]:
    """One or Multiple RemoteAddressStrategy: each address must be a valid IPv4 (as commons-validator
    checks it: no blanks, no leading zeros) or IPv6 address, else the pattern is refused (with the
    message 4.9.3 gives, naming the address: an update request's remark shows it)."""
    allowed = set()
    for address in addresses:
        if _valid_ipv4(address):
            allowed.add(address)
        elif _valid_ipv6(address):
            allowed.add(_normalized(address))
        else:
            raise AclConfigError(f"Netaddress examine Exception netaddress is {address}")
    return lambda ip: _normalized(ip) in allowed


def _expand_ipv6(text: str, groups: int) -> str:
    """AclUtils.expandIP: upper case, ``::`` widened so that the text has *groups* groups, each group
    left-padded to four digits (the text form RocketMQ compares IPv6 white addresses in)."""
    text = text.upper()
    pad = groups - text.count(":")
    if pad > 0:
        text = text.replace("::", ":" * (pad + 1))
    return ":".join(g.rjust(4, "0") for g in text.split(":"))


def _ipv6_range(text: str, pattern: str | None) -> Callable[[str], bool]:
    """RangeRemoteAddressStrategy for an IPv6 pattern: the first group after the first that is ``*`` or a
    hex ``lo-hi`` is the range, the groups before it (as AclUtils.v6ipProcess expands them) are fixed, a
    ``*`` after a range leaves the last group free; an IPv4 peer never matches."""
    refused = AclConfigError(f"white address pattern {pattern!r} is not one RocketMQ accepts")
    star, minus, last = text.find("*"), text.find("-"), text.rfind(":")
    if star > -1 and star != len(text) - 1:
        raise refused  # '*' only at the end
    if minus > -1 and minus <= (last if star == -1 else text.rfind(":", 0, last)):
        raise refused  # a range only in the last group, or the one before a final '*'
    if star > -1 and minus > -1 and text.rfind(":", 0, last) == -1:
        raise refused  # 'lo-hi:*': no group before the range (4.9.3's v6ipProcess fails on it)
    tokens = [t for t in text.split(":") if t]
    lo = hi = index = 0
    for index in range(1, len(tokens)):
        value = tokens[index].strip()
        if value == "*":
            lo, hi = 0, 0xFFFF
        elif "-" in value:
            bounds = [b for b in value.split("-") if b]
            try:
                lo, hi = int(bounds[0], 16), int(bounds[1], 16)
            except (IndexError, ValueError):
                raise refused from None
            if value.startswith("-") or not 0 <= lo <= hi <= 0xFFFF:
                raise refused
        if hi > 0:
            break
    fixed = _expand_ipv6(text, 8).split(":")[:index - 1]
    if hi <= 0 or not all(g and all(c in "0123456789ABCDEF" for c in g) and int(g, 16) <= 0xFFFF for g in fixed):
        raise refused
    if star > -1 and minus > -1:
        head = _expand_ipv6(text[:text.rfind(":", 0, last)], 6)
    else:
        head = _expand_ipv6(text[:last], 7)
    at = len([g for g in head.split(":") if g])

    def in_range(ip: str) -> bool:
        try:
            addr = ipaddress.ip_address(ip.strip().strip("[]"))
        except ValueError:
            return False
        if addr.version != 6:
            return False
        full = addr.exploded.upper()
        value = full[5 * at:5 * at + 4]
        return full.startswith(head) and len(value) == 4 and lo <= int(value, 16) <= hi

    return in_range


def _normalized(ip: str) -> str:
    try:
        return str(ipaddress.ip_address(ip.strip().strip("[]")))
    except ValueError:
        return ip.strip()


def address_matcher(pattern: str | None) -> Callable[[str], bool]:
    """A predicate on a peer IP for one white-address pattern (RemoteAddressStrategyFactory's forms):
    blank matches nothing; ``*`` (also ``*.*.*.*`` and the IPv6 all-star form) everything; ``a.b.c.{x,y}``
    the listed last octets; ``ip1,ip2`` that set; ``*`` or ``lo-hi`` in an octet (``192.168.1.*``,
    ``192.168.1.1-100``) a range on it (:func:`_ipv4_range`, :func:`_ipv6_range`); anything else one exact
    address.  Only a blank pattern is trimmed (4.9.3 trims only the octets of a range)."""
    text = pattern or ""
    if java_is_blank(text):
        return _never
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _always
    if text.endswith("}"):
        tokens = [t for t in text.split(":" if ":" in text else ".") if t]
        if (":" not in text and len(tokens) < 4) or not tokens[-1].startswith("{"):
            raise AclConfigError(f"white address pattern {pattern!r} is not one RocketMQ accepts")
        head = text[:text.index("{")]
        return _exact([head + last for last in tokens[-1][1:-1].split(",") if last], pattern)
    if "," in text:
        return _exact([part for part in text.split(",") if part], pattern)
    if ":" in text and ("*" in text or "-" in text):
        return _ipv6_range(text, pattern)
    if "*" in text or "-" in text:
        return _ipv4_range(text, pattern)
    return _exact([text], pattern)


# --- files -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Account:
    access_key: str
    secret_key: str = field(repr=False)
    white: Callable[[str], bool]
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    #: resource (topic, or %RETRY%group) -> perm; None when the account lists none (as Java's null map)
    perms: Mapping[str, int] | None


@dataclass(frozen=True)
class AclConfig:
    global_white: tuple[Callable[[str], bool], ...]
    accounts: Mapping[str, Account]


def acl_files(home: str | os.PathLike[str]) -> list[Path]:
    """The ACL files of a RocketMQ home: conf/acl/**/*.yml|yaml (sorted), then conf/plain_acl.yml."""
    base = Path(home) / "conf"
    found = sorted(p for p in (base / "acl").rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml")) \
        if (base / "acl").is_dir() else []
    default = base / "plain_acl.yml"
    if default.is_file() and default not in found:
        found.append(default)
    return found


def _load_yaml(path: Path) -> object:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise AclConfigError("PyYAML is needed to read ACL files (pip install pyyaml)") from exc
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    # bytes that are not UTF-8 (UnicodeDecodeError), a date that is no date (ValueError) and nesting too deep
    # are a broken file like bad YAML, as SnakeYAML's exceptions are AclExceptions to 4.9.3
    except (OSError, ValueError, RecursionError, yaml.YAMLError) as exc:
        raise AclConfigError(f"{path}: {exc}") from exc


def _perms(entries: object, kind: str, *, group: bool, into: dict[str, int]) -> None:
    if entries is None:
        return
    if not isinstance(entries, list):
        raise AclConfigError(f"{kind}Perms must be a list of 'name=PERM'")
    for entry in entries:
        items = [s for s in str(entry).split("=") if s]
        if len(items) != 2:
            raise AclConfigError(f"Parse resource permission failed for {kind}:{entry}")
        name = java_trim(items[0])
        into[RETRY_GROUP_TOPIC_PREFIX + name if group else name] = parse_perm(items[1])


def java_boolean(value: object, where: object) -> bool:
    """An account's ``admin`` as fastjson's castToBoolean turns the YAML value into PlainAccessConfig's
    boolean: a number is true when its int value is 1; a text "true"/"1"/"Y"/"y"/"T" true, "false"/"0"/"F"/
    "f"/"N", blank or "null" false; anything else does not load (JSONException in 4.9.3)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return (value + 2**31) % 2**32 - 2**31 == 1  # Long.intValue keeps the low 32 bits
    if isinstance(value, float):
        return value == value and 1 <= value < 2  # Double.intValue truncates toward zero
    if isinstance(value, str):
        if value in ("", "null", "NULL") or value.lower() in ("false", "f") or value in ("0", "N"):
            return False
        if value.lower() in ("true", "y") or value in ("1", "T"):
            return True
    raise AclConfigError(f"{where}: admin {value!r} can not cast to boolean")


#: PlainAccessConfig's properties by their lower-case names
_ACCOUNT_FIELDS = {name.lower(): name for name in (
    "accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm",
    "topicPerms", "groupPerms")}
#: fastjson's fnv1a_64_extract: '_' and '-' dropped, only ASCII A-Z lowered
_SMART_KEY = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "_-")


def account_fields(raw: Mapping[Any, object], where: object) -> dict[str, Any]:
    """An account mapping of an ACL file as 4.9.3 reads it into a PlainAccessConfig (fastjson 1.2.76's
    JavaBeanDeserializer.smartMatch, key by key in file order, a later key setting a property again): a key
    is a property when it is its name, or is its name once ``_`` and ``-`` are dropped and ASCII letters
    lowered (``AccessKey``, ``access_key``, ``SECRET-KEY``); ``is`` + such a name is ``admin`` only (the
    one boolean).  Other keys are ignored; a key that is no text (``1:``, ``true:``) keeps the file from
    loading, as fastjson's cast of it to String fails.  Returns property name -> value."""
    out: dict[str, object] = {}
    for key, value in raw.items():
        if key is None:
            continue
        if not isinstance(key, str):
            raise AclConfigError(f"{where}: an account key must be text, not {key!r}")
        name = key if key in _ACCOUNT_FIELDS.values() else _ACCOUNT_FIELDS.get(key.translate(_SMART_KEY))
        if name is None and key.startswith("is"):  # "is" + a name: the boolean's only
            name = "admin" if _ACCOUNT_FIELDS.get(key[2:].translate(_SMART_KEY)) == "admin" else None
        if name is not None:
            out[name] = value
    return out


def _account(raw: object, where: Path) -> Account:
    if not isinstance(raw, dict):
        raise AclConfigError(f"{where}: an account must be a mapping")
    raw = account_fields(raw, where)
    ak, sk = raw.get("accessKey"), raw.get("secretKey")
    if ak is None or sk is None:
        raise AclConfigError(f"{where}: an account needs accessKey and secretKey")
    ak, sk = str(ak), str(sk)
    if len(ak) <= 6:
        raise AclConfigError(f"The accessKey={ak} cannot be less than 6 characters")
    if len(sk) <= 6:
        raise AclConfigError(f"The secretKey={'*' * len(sk)} of accessKey={ak} cannot be less than 6 characters")
    perms: dict[str, int] = {}
    _perms(raw.get("groupPerms"), "group", group=True, into=perms)
    _perms(raw.get("topicPerms"), "topic", group=False, into=perms)
    admin = raw.get("admin", False)
    white = raw.get("whiteRemoteAddress")
    return Account(ak, sk, address_matcher(None if white is None else str(white)),
                   java_boolean(admin, where), parse_perm(raw.get("defaultTopicPerm")),
                   parse_perm(raw.get("defaultGroupPerm")), perms or None)


def load_acl_files(paths: Iterable[Path]) -> AclConfig:
    """The configuration in *paths*, in order (the first file to define an access key wins)."""
    white: list[Callable[[str], bool]] = []
    accounts: dict[str, Account] = {}
    for path in paths:
        _add_file(_load_yaml(path), path, white, accounts)
    return AclConfig(tuple(white), accounts)


def check_acl_data(data: object, where: Path) -> None:
    """Raise AclConfigError unless *data* (a parsed ACL file meant for *where*) would load."""
    _add_file(data, where, [], {})


def _add_file(data: object, path: Path, white: list[Callable[[str], bool]], accounts: dict[str, Account]) -> None:
    if not isinstance(data, dict) or not data:
        raise AclConfigError(f"{path} file is not data")
    patterns, raws = data.get("globalWhiteRemoteAddresses"), data.get("accounts")
    # a scalar is no list (4.9.3's getJSONArray fails on it): walked as one, '10.10.*' would be the
    # patterns '1', '0', '.', ..., '*', the last of which lets every address in
    if patterns is not None and not isinstance(patterns, list):
        raise AclConfigError(f"{path}: globalWhiteRemoteAddresses must be a list of address patterns")
    if raws is not None and not isinstance(raws, list):
        raise AclConfigError(f"{path}: accounts must be a list")
    for pattern in patterns or []:
        white.append(address_matcher(None if pattern is None else str(pattern)))
    for raw in raws or []:
        account = _account(raw, path)
        if account.access_key in accounts:
            log.warning("accessKey %s is defined again in %s: the first definition stays", account.access_key, path)
            continue
        accounts[account.access_key] = account


# --- the check ---------------------------------------------------------------------------------------------


def _retry(group: str | None) -> str | None:
    return None if group is None else RETRY_GROUP_TOPIC_PREFIX + group


def needed_resources(code: int, ext: Mapping[str, str], body: bytes | None) -> dict[str, int]:
    """Resource -> permission a request of *code* needs (PlainAccessValidator.parse's table)."""
    needs: dict[str, int] = {}

    def add(resource: str | None, perm: int) -> None:
        if resource is not None:
            needs[resource] = perm

    get = ext.get
    if code == RequestCode.SEND_MESSAGE:
        add(get("topic"), PUB)
    elif code == RequestCode.SEND_MESSAGE_V2:
        add(get("b"), PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        add(get("originTopic"), PUB)
        add(_retry(get("group")), SUB)
    elif code == RequestCode.PULL_MESSAGE:
        add(get("topic"), SUB)
        add(_retry(get("consumerGroup")), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        add(get("topic"), SUB)
    elif code == RequestCode.HEART_BEAT:
        if not body:  # no HeartbeatData to read the groups from: 4.9.3's parse fails, an AclException too
            raise AclConfigError("heartbeat has no body")
        try:
            # as the handler reads it (HeartbeatData.decode): fastjson's lenient forms (a BOM, raw control
            # characters in strings) are a heartbeat, not a refusal
            data = fastjson.loads(body)
        except (fastjson.JsonBodyError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise AclConfigError(f"heartbeat body is not JSON: {exc}") from exc
        # a body of another shape is refused here, as the handler would refuse it, not met with a traceback
        consumers = data.get("consumerDataSet") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(consumers or [], list):
            raise AclConfigError("heartbeat body is not a HeartbeatData object")
        for consumer in consumers or []:
            subs = consumer.get("subscriptionDataSet") if isinstance(consumer, dict) else None
            if not isinstance(consumer, dict) or not isinstance(subs or [], list) or not all(
                    isinstance(sub, dict) for sub in subs or []):
                raise AclConfigError("heartbeat body's consumerDataSet is not a list of ConsumerData objects")
            group = consumer.get("groupName")
            add(_retry(None if group is None else str(group)), SUB)
            for sub in subs or []:
                topic = sub.get("topic")
                add(None if topic is None else str(topic), SUB)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        add(_retry(get("consumerGroup")), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        add(_retry(get("consumerGroup")), SUB)
        add(get("topic"), SUB)
    return needs


def _printable(resource: str) -> str:
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


class PlainAcl:
    """The configuration of one RocketMQ home's ACL files, re-read when they change; :meth:`check`."""

    def __init__(self, home: str | os.PathLike[str], *, clock: Callable[[], float] = time.monotonic) -> None:
        self.home = Path(home)
        self._clock = clock
        #: one reload at a time: the watch thread's and an admin request's (the event loop's)
        self._reload_lock = threading.Lock()
        self._watch: threading.Thread | None = None
        self._watch_stop = threading.Event()
        self._stamp = self._file_stamp()
        self.config = load_acl_files(acl_files(self.home))  # a bad file at start-up is an error
        self._next_look = clock() + _RELOAD_CHECK_S

    def _file_stamp(self) -> tuple[tuple[str, int, int, bytes], ...]:
        stamp = []
        for path in acl_files(self.home):
            try:
                st = path.stat()
                digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).digest()
            except OSError:
                continue
            stamp.append((str(path), st.st_mtime_ns, st.st_size, digest))
        return tuple(stamp)

    def reload_if_changed(self) -> bool:
        """Re-read the files if one changed, appeared or went; True when a new configuration is in force."""
        with self._reload_lock:
            stamp = self._file_stamp()
            if stamp == self._stamp:
                return False
            self._stamp = stamp
            try:
                self.config = load_acl_files(acl_files(self.home))
            except AclConfigError as exc:
                log.error("ACL files under %s did not load, the previous configuration stays: %s",
                          self.home, exc)
                return False
        log.info("ACL configuration reloaded from %s", self.home)
        return True

    def reload(self) -> None:
        """Re-read the files now (after an admin request rewrote one); AclConfigError leaves the current
        configuration in force."""
        with self._reload_lock:
            stamp = self._file_stamp()
            self.config = load_acl_files(acl_files(self.home))
            self._stamp = stamp
        log.info("ACL configuration reloaded from %s", self.home)

    def start_watch(self, interval_s: float = _RELOAD_CHECK_S) -> None:
        """Look at the files every *interval_s* on a thread of their own (requests or not), until
        :meth:`stop_watch`; :meth:`check` then leaves the files alone.  Idempotent."""
        if self._watch is not None:
            return
        self._watch_stop.clear()
        self._watch = threading.Thread(target=self._watch_files, args=(interval_s,), name="AclFileWatch",
                                       daemon=True)
        self._watch.start()

    def stop_watch(self) -> None:
        """End the watch thread (it ends at once unless a reload is under way).  Idempotent."""
        watch, self._watch = self._watch, None
        if watch is not None:
            self._watch_stop.set()
            watch.join()

    def _watch_files(self, interval_s: float) -> None:
        while not self._watch_stop.wait(interval_s):
            try:
                self.reload_if_changed()
            except Exception:  # the watch goes on, as 4.9.3's does after an exception
                log.exception("looking at the ACL files under %s failed", self.home)

    def check(self, code: int, ext: Mapping[str, str], body: bytes | None, peer_ip: str) -> str | None:
        """None when the request may go on, else why not (the AclException message)."""
        if self._watch is None:
            now = self._clock()
            if now >= self._next_look:
                self._next_look = now + _RELOAD_CHECK_S
                self.reload_if_changed()
        config = self.config
        try:
            needs = needed_resources(code, ext, body)
        except AclConfigError as exc:
            return str(exc)
        for white in config.global_white:
            if white(peer_ip):
                return None
        access_key = ext.get(ACCESS_KEY)
        if access_key is None:
            return "No accessKey is configured"
        account = config.accounts.get(access_key)
        if account is None:
            return f"No acl config for {access_key}"
        if account.white(peer_ip):
            return None
        if sign(account.secret_key, signing_content(ext, body)) != ext.get(SIGNATURE):
            return f"Check signature failed for accessKey={access_key}"
        if code in ADMIN_CODES and not account.admin:
            return f"Need admin permission for request code={code}, but accessKey={access_key} is not"
        owned = account.perms
        if not needs or (owned is None and account.admin):
            return None
        for resource, perm in needs.items():
            if owned is not None and resource in owned:
                have = owned[resource]
            else:
                have = account.default_group_perm if resource.startswith(RETRY_GROUP_TOPIC_PREFIX) else account.default_topic_perm
            if not check_permission(perm, have):
                return f"No default permission for {_printable(resource)}"
        return None
