"""AdminClient's plain ACL calls (mqadmin updateAccessConfig, deleteAccessConfig, updateGlobalWhiteAddr,
clusterAclConfigVersion, getAccessConfigSubCommand), one broker each (:meth:`AclAdmin.acl_brokers` finds a
cluster's): UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52),
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), GET_BROKER_CLUSTER_ACL_CONFIG (54).  Mixed into AdminClient.
Loop-bound.
"""

from __future__ import annotations

from rocketstore.client.admin_types import AclConfigInfo, AclVersionInfo, AdminCalls
from rocketstore.client.errors import ClientError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import DataVersion
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.headers import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)

__all__ = ["AclAdmin"]


class AclAdmin(AdminCalls):
    async def acl_brokers(self, cluster: str | None = None, *, slaves: bool = True) -> list[str]:
        """Addresses of the brokers of *cluster* (all clusters when None) that mqadmin's ``-c`` reaches:
        masters and slaves for the ACL changes (CommandUtil.fetchMasterAndSlaveAddrByClusterName), masters
        only (*slaves* False) for the version query."""
        info = await self.cluster_info()
        info.require(cluster)
        names = info.clusters[cluster] if cluster is not None else sorted(info.brokers)
        out: list[str] = []
        for name in names:
            bd = info.brokers.get(name)
            if bd is None:
                continue
            for broker_id, addr in sorted(bd.broker_addrs.items()):
                if (slaves or broker_id == 0) and addr not in out:
                    out.append(addr)
        if not out:
            raise ClientError("no broker is registered with the name server" if cluster is None
                              else f"no broker of cluster {cluster!r} is registered with the name server")
        return out

    async def update_acl_config(self, broker_addr: str, access_key: str, secret_key: str, *,
                                white_remote_address: str | None = None, admin: bool = False,
                                default_topic_perm: str | None = None, default_group_perm: str | None = None,
                                topic_perms: list[str] | None = None, group_perms: list[str] | None = None) -> None:
        """Create the account on the broker, or update it where it is defined (mqadmin updateAccessConfig).
        Fields left None keep an existing account's values; *topic_perms* / *group_perms* are ``name=PERM``
        (PERM one of PUB, SUB, PUB|SUB, DENY) and replace the account's list when given."""
        header = CreateAccessConfigRequestHeader(
            access_key=access_key, secret_key=secret_key, white_remote_address=white_remote_address, admin=admin,
            default_topic_perm=default_topic_perm, default_group_perm=default_group_perm,
            topic_perms=None if topic_perms is None else ",".join(topic_perms),
            group_perms=None if group_perms is None else ",".join(group_perms))
        await self._call(broker_addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header.to_ext_fields())

    async def delete_acl_config(self, broker_addr: str, access_key: str) -> None:
        """Remove the account from the broker's file that defines it (mqadmin deleteAccessConfig)."""
        ext = DeleteAccessConfigRequestHeader(access_key=access_key).to_ext_fields()
        await self._call(broker_addr, RequestCode.DELETE_ACL_CONFIG, ext)

    async def update_global_white_addrs(self, broker_addr: str, addresses: list[str]) -> None:
        """Replace the global white address list of the broker's conf/plain_acl.yml (mqadmin
        updateGlobalWhiteAddr; the file must already have a globalWhiteRemoteAddresses key)."""
        ext = UpdateGlobalWhiteAddrsConfigRequestHeader(global_white_addrs=",".join(addresses)).to_ext_fields()
        await self._call(broker_addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext)

    async def acl_config_version(self, broker_addr: str) -> AclVersionInfo:
        """The broker's ACL file versions (mqadmin clusterAclConfigVersion -b)."""
        response = await self._call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        h = GetBrokerAclConfigResponseHeader.from_ext_fields(response.ext_fields)
        files = fastjson.loads(h.all_acl_file_version) if h.all_acl_file_version else {}
        if not isinstance(files, dict):
            raise ClientError(f"unexpected allAclFileVersion: {str(h.all_acl_file_version)[:200]!r}")
        return AclVersionInfo(h.broker_name, h.broker_addr, h.cluster_name,
                              DataVersion.from_json(fastjson.loads(h.version)),
                              {str(p): DataVersion.from_json(v) for p, v in files.items()})

    async def cluster_acl_config(self, broker_addr: str) -> AclConfigInfo:
        """The broker's global white addresses and accounts (mqadmin getAccessConfigSubCommand -b)."""
        obj = self._json(await self._call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG))
        return AclConfigInfo([str(a) for a in obj.get("globalWhiteAddrs") or []],
                             [dict(a) for a in obj.get("plainAccessConfigs") or [] if isinstance(a, dict)])
