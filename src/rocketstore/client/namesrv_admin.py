"""AdminClient's calls to the name servers themselves (mqadmin getNamesrvConfig, updateNamesrvConfig,
updateKvConfig, deleteKvConfig): their settings and their KV table.

Each call goes to every name server of the client's list, as mqadmin does, since name servers share
nothing: a setting or KV entry given to one only is unknown to the others.  Mixed into AdminClient, whose
``_call`` and ``namesrv_addrs`` it uses.  Loop-bound.
"""

from __future__ import annotations

from rocketstore.client.admin_types import AdminCalls
from rocketstore.message.java_properties import format_properties, parse_properties_text
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.headers import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    PutKVConfigRequestHeader,
)

__all__ = ["NamesrvAdmin"]


class NamesrvAdmin(AdminCalls):
    async def namesrv_configs(self) -> dict[str, dict[str, str]]:
        """Each name server's settings (name server address -> properties)."""
        return {addr: parse_properties_text((await self._call(addr, RequestCode.GET_NAMESRV_CONFIG)).body.decode())
                for addr in await self.namesrvs()}

    async def update_namesrv_config(self, properties: dict[str, str]) -> list[str]:
        """Change settings on every name server; the addresses changed.  A name server that refuses one (an
        unknown name, a bad value, a path) raises BrokerError with its reason, and the ones after it in the
        list are not asked."""
        if not properties:
            raise ValueError("no setting to change")
        body = format_properties(properties).encode("utf-8")
        addrs = list(await self.namesrvs())
        for addr in addrs:
            await self._call(addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, body)
        return addrs

    async def put_kv(self, namespace: str, key: str, value: str) -> None:
        """PUT_KV_CONFIG on every name server (e.g. ORDER_TOPIC_CONFIG, which they hand to brokers and
        clients with orderMessageEnable)."""
        ext = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value).to_ext_fields()
        for addr in await self.namesrvs():
            await self._call(addr, RequestCode.PUT_KV_CONFIG, ext)

    async def get_kv(self, namespace: str, key: str) -> str | None:
        """The value the first name server that has one holds, None when none has it."""
        ext = GetKVConfigRequestHeader(namespace=namespace, key=key).to_ext_fields()
        for addr in await self.namesrvs():
            response = await self._call(addr, RequestCode.GET_KV_CONFIG, ext, b"", ResponseCode.QUERY_NOT_FOUND)
            if response.code == ResponseCode.SUCCESS:
                return response.ext_fields.get("value")
        return None

    async def delete_kv(self, namespace: str, key: str) -> None:
        ext = DeleteKVConfigRequestHeader(namespace=namespace, key=key).to_ext_fields()
        for addr in await self.namesrvs():
            await self._call(addr, RequestCode.DELETE_KV_CONFIG, ext)
