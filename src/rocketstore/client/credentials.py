"""ACL credentials for the clients (RocketMQ's SessionCredentials as AclClientRPCHook uses them).

Pass them as ``credentials=`` to Producer, PullConsumer, PushConsumer, BlockingPushConsumer or AdminClient:
every connection those open (brokers and name servers alike, as RocketMQ's clients do) signs each request it
sends (rocketstore.remoting.transport.signed_request).  The secret key never shows in a repr.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SessionCredentials"]


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("credentials need an access key and a secret key")
