"""The ACL listing (mqadmin getAccessConfigSubCommand), added to admin_cmds' ``acl`` command:

    rocketstore acl config [-b ADDR | -c CLUSTER] [--show-secret-keys]   each master's white list and accounts

mqadmin prints every account field, secret keys included; here they are masked unless asked for, since the
listing is what an operator pastes into a ticket.  Parse arguments, call one AdminClient method, print.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable
from typing import Any, TypeVar

from rocketstore.cli.output import add_targets, admin_of, print_json, print_table, run_command
from rocketstore.errors import RequestTimeoutError

__all__ = ["add_acl_commands", "read_acl"]

MASK = "******"

T = TypeVar("T")

#: said after the timeout of an ACL read: 4.9.3's broker started without aclEnable has no ACL validator, fails
#: to build its answer to GET_BROKER_CLUSTER_ACL_INFO and GET_BROKER_CLUSTER_ACL_CONFIG, logs that and answers
#: nothing (its ACL updates and deletes do answer, with the failure)
ACL_READ_SILENCE = (" (a 4.9.3 broker whose ACL is off, aclEnable=false, never answers this request;"
                    " enable ACL on it, or leave it out)")


async def read_acl(call: Awaitable[T]) -> T:
    """*call*'s result; its RequestTimeoutError says why a 4.9.3 broker may stay silent."""
    try:
        return await call
    except RequestTimeoutError as exc:
        raise RequestTimeoutError(f"{exc}{ACL_READ_SILENCE}") from exc


def add_acl_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    config = commands.add_parser("config", help="each master broker's global white addresses and accounts "
                                                "(mqadmin getAccessConfigSubCommand)")
    config.add_argument("--show-secret-keys", action="store_true",
                        help="print the accounts' secret keys (masked otherwise)")
    add_targets(config, brokers="master")
    config.set_defaults(handler=_config)


def _shown(account: dict[str, Any], secrets: bool) -> dict[str, Any]:
    return account if secrets or not account.get("secretKey") else {**account, "secretKey": MASK}


def _text(value: object) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _config(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            addrs = [args.broker] if args.broker is not None else await admin.acl_brokers(args.cluster, slaves=False)
            configs = [(addr, await read_acl(admin.cluster_acl_config(addr))) for addr in addrs]
        if args.json:
            print_json([{"brokerAddr": addr, "globalWhiteAddrs": c.global_white_addrs,
                         "plainAccessConfigs": [_shown(a, args.show_secret_keys) for a in c.accounts]}
                        for addr, c in configs])
            return 0
        for addr, c in configs:
            print(f"{addr}: globalWhiteRemoteAddresses {_text(c.global_white_addrs)}")
        fields = ("accessKey", "secretKey", "admin", "whiteRemoteAddress", "defaultTopicPerm", "defaultGroupPerm",
                  "topicPerms", "groupPerms")
        print_table(["BROKER", "ACCESS KEY", "SECRET KEY", "ADMIN", "WHITE ADDRESS", "DEFAULT TOPIC",
                     "DEFAULT GROUP", "TOPIC PERMS", "GROUP PERMS"],
                    [(addr, *(_text(_shown(a, args.show_secret_keys).get(f)) for f in fields))
                     for addr, c in configs for a in c.accounts])
        return 0

    return run_command(go())
