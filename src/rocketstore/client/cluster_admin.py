"""AdminClient's cluster-wide calls (mqadmin clusterList, wipeWritePerm, addWritePerm): every broker of every
cluster with its GET_BROKER_RUNTIME_INFO (28) figures, and WIPE_WRITE_PERM_OF_BROKER (205) /
ADD_WRITE_PERM_OF_BROKER (327) on each name server, which answer how many topics of the broker they changed
(wipeTopicCount / addTopicCount).

Mixed into AdminClient, whose plumbing and ``runtime_info`` it uses.  Imports remoting only.  Loop-bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rocketstore.client.admin_types import AdminCalls, ClusterBrokerRow
from rocketstore.client.errors import ClientError
from rocketstore.errors import RocketStoreError
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

__all__ = ["ClusterAdmin", "WritePermChange"]


@dataclass(frozen=True, slots=True)
class WritePermChange:
    """What one name server did to a broker's topics: how many it took the write perm from (or gave it)."""

    namesrv_addr: str
    topic_count: int


class ClusterAdmin(AdminCalls):
    async def cluster_list(self, cluster: str | None = None) -> list[ClusterBrokerRow]:
        """mqadmin clusterList: every broker address (masters and slaves) of *cluster* (every cluster when
        None), clusters and broker names sorted, then by broker id, each with its runtime table.  A broker
        that does not answer gets a row with the error instead (mqadmin prints zeros and a stack trace)."""
        info = await self.cluster_info()
        info.require(cluster)
        rows = []
        for cluster_name in sorted(info.clusters) if cluster is None else [cluster]:
            for name in sorted(info.clusters[cluster_name]):
                data = info.brokers.get(name)
                for broker_id, addr in sorted(data.broker_addrs.items()) if data is not None else []:
                    try:
                        rows.append(ClusterBrokerRow(cluster_name, name, broker_id, addr,
                                                     await self.runtime_info(addr)))
                    except (RocketStoreError, OSError, TimeoutError) as exc:
                        rows.append(ClusterBrokerRow(cluster_name, name, broker_id, addr, None,
                                                     str(exc) or type(exc).__name__))
        return rows

    async def wipe_write_perm(self, broker_name: str) -> list[WritePermChange]:
        """mqadmin wipeWritePerm: every name server stops routing writes to *broker_name* (its queue data
        lose the write perm until the broker registers again with new perms, or addWritePerm)."""
        return await self._write_perm(broker_name, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                                      WipeWritePermOfBrokerRequestHeader(broker_name=broker_name).to_ext_fields(),
                                      lambda ext: WipeWritePermOfBrokerResponseHeader.from_ext_fields(ext)
                                      .wipe_topic_count)

    async def add_write_perm(self, broker_name: str) -> list[WritePermChange]:
        """mqadmin addWritePerm: every name server gives *broker_name*'s queue data the write perm back."""
        return await self._write_perm(broker_name, RequestCode.ADD_WRITE_PERM_OF_BROKER,
                                      AddWritePermOfBrokerRequestHeader(broker_name=broker_name).to_ext_fields(),
                                      lambda ext: AddWritePermOfBrokerResponseHeader.from_ext_fields(ext)
                                      .add_topic_count)

    async def _write_perm(self, broker_name: str, code: int, ext: dict[str, str],
                          topic_count: Callable[[dict[str, str]], int]) -> list[WritePermChange]:
        """*code* on every name server; how many of the broker's topics each changed."""
        await self._require_broker(broker_name)
        changes = []
        for addr in await self.namesrvs():
            response = await self._call(addr, code, ext)
            changes.append(WritePermChange(addr, topic_count(response.ext_fields)))
        return changes

    async def _require_broker(self, broker_name: str) -> None:
        """ClientError for a broker name the name servers do not know (theirs would answer 0 topics)."""
        info = await self.cluster_info()
        if broker_name not in info.brokers:
            known = ", ".join(sorted(info.brokers)) or "none"
            raise ClientError(f"broker {broker_name!r} is not known to the name server (known: {known})")
