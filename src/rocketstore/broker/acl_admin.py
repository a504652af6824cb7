"""Changing the plain ACL files through admin requests, as RocketMQ 4.9.3's PlainPermissionManager does
(updateAccessConfig, deleteAccessConfig, updateGlobalWhiteAddrsConfig, getAllAclConfig, getDataVersionMap).

* An account is updated in the file that defines it (the first of :func:`acl_files` to list its access key,
  under any spelling of the key the loader takes: ``accessKey``, ``AccessKey``, ``access_key``, ...);
  a new one is appended to ``conf/plain_acl.yml`` (created when missing).  An update keeps the account's
  keys the request leaves unset (no white address, default perm or perm list given) and moves the account
  to the end of the file's list, as the Java map rewrite does.
* The global white list replaced is the one of ``conf/plain_acl.yml``; a file without a
  ``globalWhiteRemoteAddresses`` key is left alone (False, as 4.9.3 answers).
* Every write bumps the file's ``dataVersion`` (``[{counter, timestamp}]``: counter + 1, timestamp now).

The whole file is rewritten (comments are lost, as with RocketMQ's SnakeYAML dump), after the new text has
been checked to load as an ACL file: a request that would leave a broken file changes nothing.  Writes are
config_files.write_text_atomically's (``.tmp``, fsync, rename, the previous text kept as ``.bak``: names the
reload does not read); the running :class:`~rocketstore.broker.acl.PlainAcl` is reloaded at once.  Failures raise :class:`AclUpdateError` with the AclException's message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketstore.broker.acl import (
    AclConfigError,
    PlainAcl,
    account_fields,
    acl_files,
    check_acl_data,
    java_boolean,
    java_trim,
    parse_perm,
)
from rocketstore.broker.config_files import write_text_atomically
from rocketstore.remoting.bodies import DataVersion

__all__ = ["AclAdmin", "AclUpdateError", "PlainAccessConfig", "java_split"]

log = logging.getLogger(__name__)

#: AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: a key must be longer than this
KEY_MIN_LENGTH = 6
ACCOUNTS, WHITE_ADDRS, DATA_VERSION = "accounts", "globalWhiteRemoteAddresses", "dataVersion"


class AclUpdateError(AclConfigError):
    """An admin change of the ACL files that was refused or failed (Java's AclException)."""


def java_split(text: str | None, sep: str = ",") -> list[str] | None:
    """UtilAll.split: Java ``String.split`` (trailing empty strings dropped, ``""`` gives ``[""]``); None
    stays None."""
    if text is None:
        return None
    if text == "":
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


@dataclass(frozen=True, slots=True)
class PlainAccessConfig:
    """One account as an UPDATE_AND_CREATE_ACL_CONFIG request gives it (org.apache.rocketmq.common.
    PlainAccessConfig); None means "not given"."""

    access_key: str | None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        """fastjson's form (null fields left out)."""
        out: dict[str, Any] = {"accessKey": self.access_key, "admin": self.admin,
                               "defaultGroupPerm": self.default_group_perm,
                               "defaultTopicPerm": self.default_topic_perm, "groupPerms": self.group_perms,
                               "secretKey": self.secret_key, "topicPerms": self.topic_perms,
                               "whiteRemoteAddress": self.white_remote_address}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_yaml(cls, raw: dict[str, Any]) -> PlainAccessConfig:
        raw = account_fields(raw, "an account")  # the keys fastjson's smart match takes (access_key, ...)

        def text(key: str) -> str | None:
            value = raw.get(key)
            return None if value is None else str(value)

        def items(key: str) -> list[str] | None:
            value = raw.get(key)
            return None if value is None else [str(v) for v in value]

        return cls(text("accessKey"), text("secretKey"), text("whiteRemoteAddress"),
                   java_boolean(raw.get("admin"), raw.get("accessKey")), text("defaultTopicPerm"),
                   text("defaultGroupPerm"), items("topicPerms"), items("groupPerms"))


def _check_keys(cfg: PlainAccessConfig) -> None:
    """PlainPermissionManager.checkPlainAccessConfig."""
    ak, sk = cfg.access_key, cfg.secret_key
    if ak is None or sk is None or len(ak) <= KEY_MIN_LENGTH or len(sk) <= KEY_MIN_LENGTH:
        # 4.9.3's message prints the secret key itself; this one (a remark and a log line) masks it
        shown = None if sk is None else "*" * len(sk)
        raise AclUpdateError(f"The accessKey={ak} and secretKey={shown} cannot be null and length should longer "
                             "than 6")


def _check_resource_perms(resources: list[str] | None) -> None:
    """Permission.checkResourcePerms: each ``name=PERM`` with PERM one of DENY, PUB, SUB, PUB|SUB, SUB|PUB."""
    for resource in resources or []:
        items = [s for s in resource.split("=") if s]
        if len(items) != 2:
            raise AclUpdateError(f"Parse Resource format error for {resource}.\nThe expected resource format is "
                                 "'Res=Perm'. For example: topicA=SUB")
        perm = java_trim(items[1])  # String.trim: a PUB followed by U+00A0 is no PUB
        if perm != "DENY" and parse_perm(perm) == parse_perm("DENY"):
            raise AclUpdateError(f"Parse resource permission error for {resource}.\nThe expected permissions are "
                                 "'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.")


def _account_map(existing: dict[str, Any] | None, cfg: PlainAccessConfig) -> dict[str, Any]:
    """PlainPermissionManager.createAclAccessConfigMap: the given fields over the existing account's.  A
    field set replaces the existing account's key for it under another spelling the loader takes
    (``SecretKey``, ``secret_key``, ...), which would otherwise win or lose by its place in the map."""
    out = existing if existing is not None else {}

    def put(name: str, value: object) -> None:
        for key in [k for k in out if isinstance(k, str) and k != name]:
            if name in account_fields({key: None}, "an account"):
                del out[key]
        out[name] = value

    assert cfg.access_key is not None
    put("accessKey", cfg.access_key)
    if cfg.secret_key:
        put("secretKey", cfg.secret_key)
    if cfg.white_remote_address is not None:
        put("whiteRemoteAddress", cfg.white_remote_address)
    put("admin", cfg.admin)
    if cfg.default_topic_perm:
        put("defaultTopicPerm", cfg.default_topic_perm)
    if cfg.default_group_perm:
        put("defaultGroupPerm", cfg.default_group_perm)
    if cfg.topic_perms is not None:
        put("topicPerms", list(cfg.topic_perms))
    if cfg.group_perms is not None:
        put("groupPerms", list(cfg.group_perms))
    return out


def _read(path: Path) -> dict[str, Any] | None:
    """The file's mapping; None when it is missing or empty (SnakeYAML's null)."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: bytes that are not UTF-8
        raise AclUpdateError(f"{path}: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise AclUpdateError(str(exc)) from exc
    if data is None:
        return None
    if not isinstance(data, dict):
        raise AclUpdateError(f"{path} is not a YAML mapping")
    return data


def _defines(raw: object, access_key: str) -> bool:
    """Whether *raw* (an entry of a file's accounts) is the account of *access_key*, its key read as the
    loader reads it (``AccessKey``, ``access_key``, ... as well as ``accessKey``): else an update would
    append a second definition the first one shadows, and a delete would leave the account in force."""
    if not isinstance(raw, dict):
        return False
    try:
        key = account_fields(raw, "an account").get("accessKey")
    except AclConfigError:
        return False
    return key is not None and str(key) == access_key


def _file_version(data: dict[str, Any] | None) -> DataVersion | None:
    versions = (data or {}).get(DATA_VERSION)
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        try:
            return DataVersion(int(versions[0].get("timestamp") or 0), int(versions[0].get("counter") or 0))
        except (TypeError, ValueError):
            return None
    return None


class AclAdmin:
    """The admin changes of one broker's ACL files; *acl* is the broker's running PlainAcl."""

    def __init__(self, acl: PlainAcl, *, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.acl = acl
        self._clock_ms = clock_ms

    @property
    def default_file(self) -> Path:
        return self.acl.home / "conf" / "plain_acl.yml"

    def _file_of(self, access_key: str) -> Path | None:
        """The first ACL file whose accounts list *access_key* (the one its definition is taken from)."""
        for path in acl_files(self.acl.home):
            data = _read(path)
            for raw in (data or {}).get(ACCOUNTS) or []:
                if _defines(raw, access_key):
                    return path
        return None

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        """Bump the dataVersion, check the text loads as an ACL file, replace *path* with it, reload."""
        import yaml

        old = _file_version(data) or DataVersion(0, 0)
        data[DATA_VERSION] = [{"counter": old.counter + 1, "timestamp": self._clock_ms()}]
        text = yaml.safe_dump(data, default_flow_style=False, sort_keys=False, allow_unicode=True)
        try:
            check_acl_data(yaml.safe_load(text), path)  # a request that would break the file changes nothing
        except AclConfigError as exc:
            raise AclUpdateError(str(exc)) from exc
        # .tmp + fsync + rename (+ the previous text as .bak): names the ACL reload never reads
        write_text_atomically(str(path), text)
        log.info("ACL file %s rewritten (dataVersion counter %d)", path, old.counter + 1)
        try:
            self.acl.reload()
        except AclConfigError as exc:  # another ACL file is broken: the write stands, as RocketMQ's does
            log.error("ACL files under %s did not reload after %s was rewritten: %s", self.acl.home, path, exc)

    # --- the requests ------------------------------------------------------------------------------------

    def update_account(self, cfg: PlainAccessConfig) -> bool:
        """UPDATE_AND_CREATE_ACL_CONFIG: change the account where it is defined, or add it to plain_acl.yml."""
        _check_keys(cfg)
        _check_resource_perms(cfg.topic_perms)
        _check_resource_perms(cfg.group_perms)
        assert cfg.access_key is not None
        path = self._file_of(cfg.access_key)
        if path is not None:
            data = _read(path) or {}
            accounts = data.get(ACCOUNTS) or []
            for i, raw in enumerate(accounts):
                if _defines(raw, cfg.access_key):
                    del accounts[i]
                    accounts.append(_account_map(raw, cfg))
                    break
            data[ACCOUNTS] = accounts
        else:
            path = self.default_file
            data = _read(path) or {}
            accounts = data.get(ACCOUNTS)
            if accounts is None:
                accounts = []
            elif not isinstance(accounts, list):
                raise AclUpdateError(f"{path}: accounts is not a list")
            accounts.append(_account_map(None, cfg))
            data[ACCOUNTS] = accounts
        self._write(path, data)
        return True

    def delete_account(self, access_key: str | None) -> bool:
        """DELETE_ACL_CONFIG: False when the key is blank or no file defines it."""
        if not access_key:
            return False
        path = self._file_of(access_key)
        if path is None:
            return False
        data = _read(path)
        if not data:
            raise AclUpdateError(f"the {path} file is not found or empty")
        accounts = data.get(ACCOUNTS) or []
        data[ACCOUNTS] = [a for a in accounts if not _defines(a, access_key)]
        self._write(path, data)
        return True

    def update_global_white(self, addresses: list[str] | None) -> bool:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace plain_acl.yml's globalWhiteRemoteAddresses; False when
        the file has no such key (RocketMQ only replaces a list that is there)."""
        if addresses is None:
            return False
        path = self.default_file
        data = _read(path)
        if not data:
            raise AclUpdateError(f"the {path} file is not found or empty")
        if data.get(WHITE_ADDRS) is None:
            log.error("%s has no globalWhiteRemoteAddresses key: the global white list is not updated", path)
            return False
        data[WHITE_ADDRS] = list(addresses)
        self._write(path, data)
        return True

    def versions(self) -> tuple[DataVersion, dict[str, DataVersion]]:
        """GET_BROKER_CLUSTER_ACL_INFO's versions: plain_acl.yml's (the deprecated single one) and each ACL
        file's by absolute path.  A file without a dataVersion has counter 0 and its modification time."""
        out: dict[str, DataVersion] = {}
        for path in acl_files(self.acl.home):
            try:
                data = _read(path)
            except AclUpdateError:
                data = None
            version = _file_version(data)
            if version is None:
                try:
                    version = DataVersion(path.stat().st_mtime_ns // 1_000_000, 0)
                except OSError:
                    version = DataVersion(self._clock_ms(), 0)
            out[str(path.absolute())] = version
        default = out.get(str(self.default_file.absolute()), DataVersion(self._clock_ms(), 0))
        return default, out

    def all_config(self) -> tuple[list[str], list[PlainAccessConfig]]:
        """GET_BROKER_CLUSTER_ACL_CONFIG: every file's global white addresses, and every account (the first
        definition of an access key)."""
        whites: list[str] = []
        accounts: list[PlainAccessConfig] = []
        seen: set[str] = set()
        for path in acl_files(self.acl.home):
            data = _read(path)
            if not data:
                raise AclUpdateError(f"{path} file is not data")
            for key in (WHITE_ADDRS, ACCOUNTS):  # a scalar there is refused (4.9.3's getJSONArray fails on it)
                if data.get(key) is not None and not isinstance(data[key], list):
                    raise AclUpdateError(f"{path}: {key} must be a list")
            whites.extend(str(w) for w in data.get(WHITE_ADDRS) or [])
            for raw in data.get(ACCOUNTS) or []:
                if not isinstance(raw, dict):
                    continue
                cfg = PlainAccessConfig.from_yaml(raw)
                if cfg.access_key not in seen and cfg.access_key is not None:
                    seen.add(cfg.access_key)
                    accounts.append(cfg)
        return whites, accounts
