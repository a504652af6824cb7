"""The name servers' own settings and KV table (mqadmin getNamesrvConfig / updateNamesrvConfig /
updateKvConfig / deleteKvConfig), through client.admin, on every name server of ``--namesrv``:

    rocketstore namesrv-config get                       each name server's settings
    rocketstore namesrv-config set KEY=VALUE ...         e.g. orderMessageEnable=true (kept in configStorePath)
    rocketstore kv get NAMESPACE KEY
    rocketstore kv put NAMESPACE KEY VALUE               e.g. ORDER_TOPIC_CONFIG OrderTopic broker-a:4
    rocketstore kv delete NAMESPACE KEY

Errors print one line on stderr and exit 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse

from rocketstore.cli.output import (
    add_common,
    admin_of,
    fail,
    print_json,
    print_table,
    run_command,
)

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    config = subparsers.add_parser("namesrv-config", help="the name servers' settings")
    actions = config.add_subparsers(dest="namesrv_config_command", metavar="ACTION")
    actions.required = True
    get = actions.add_parser("get", help="each name server's settings")
    add_common(get)
    get.set_defaults(handler=_config_get)
    put = actions.add_parser("set", help="change settings on every name server")
    put.add_argument("pairs", nargs="+", metavar="KEY=VALUE",
                     help="a setting, as namesrv.conf names it, and its new value (get lists them)")
    add_common(put)
    put.set_defaults(handler=_config_set)

    kv = subparsers.add_parser("kv", help="the name servers' KV table (e.g. ORDER_TOPIC_CONFIG)")
    kv_actions = kv.add_subparsers(dest="kv_command", metavar="ACTION")
    kv_actions.required = True
    for name, extra, handler, text in (("get", (), _kv_get, "one value"),
                                       ("put", ("value",), _kv_put, "set a value on every name server"),
                                       ("delete", (), _kv_delete, "remove a value from every name server")):
        p = kv_actions.add_parser(name, help=text)
        p.add_argument("namespace", help="the table's namespace, e.g. ORDER_TOPIC_CONFIG")
        p.add_argument("key", help="the key in that namespace (ORDER_TOPIC_CONFIG's: a topic)")
        for arg in extra:
            p.add_argument(arg, help="the value to store (ORDER_TOPIC_CONFIG's: brokerName:queueNums;...)")
        add_common(p)
        p.set_defaults(handler=handler)



def _config_get(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            configs = await admin.namesrv_configs()
        if args.json:
            print_json(configs)
        else:
            print_table(["NAME SERVER", "KEY", "VALUE"],
                        [(addr, k, v) for addr, props in configs.items() for k, v in props.items()])
        return 0

    return run_command(go())


def _config_set(args: argparse.Namespace) -> int:
    props = {}
    for pair in args.pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            return fail(f"settings are KEY=VALUE, not {pair!r}")
        try:  # the name server reads the settings as UTF-8 text: other bytes refused here, not a traceback
            pair.encode("utf-8")
        except UnicodeEncodeError:
            return fail(f"settings are UTF-8 text, not {pair!r}")
        props[key] = value

    async def go() -> int:
        async with admin_of(args) as admin:
            changed = await admin.update_namesrv_config(props)
        if args.json:
            print_json({"updated": changed, "settings": props})
        else:
            print(f"updated {', '.join(sorted(props))} on {', '.join(changed)}")
        return 0

    return run_command(go())


def _kv_get(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            value = await admin.get_kv(args.namespace, args.key)
        if value is None:
            return fail(f"no value for {args.key} in namespace {args.namespace}")
        if args.json:
            print_json({"namespace": args.namespace, "key": args.key, "value": value})
        else:
            print(value)
        return 0

    return run_command(go())


def _kv_put(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            await admin.put_kv(args.namespace, args.key, args.value)
            namesrvs = admin.namesrv_addrs
        if args.json:
            print_json({"namespace": args.namespace, "key": args.key, "value": args.value, "namesrvs": namesrvs})
        else:
            print(f"put {args.namespace} {args.key}={args.value} on {', '.join(namesrvs)}")
        return 0

    return run_command(go())


def _kv_delete(args: argparse.Namespace) -> int:
    async def go() -> int:
        async with admin_of(args) as admin:
            await admin.delete_kv(args.namespace, args.key)
            namesrvs = admin.namesrv_addrs
        if args.json:
            print_json({"namespace": args.namespace, "key": args.key, "namesrvs": namesrvs})
        else:
            print(f"deleted {args.namespace} {args.key} on {', '.join(namesrvs)}")
        return 0

    return run_command(go())
