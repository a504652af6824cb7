"""The settings of 4.9.3's NettyServerConfig that rocketstore's servers keep without acting on them.

A 4.9.3 broker and name server both carry a NettyServerConfig: GET_BROKER_CONFIG and GET_NAMESRV_CONFIG show
its fields and UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG change them (and write them to the server's
file).  rocketstore has no netty: :data:`NETTY_SERVER_KEPT` lists the fields neither of its servers acts on,
with their Java kind and 4.9.3's default as text, so that both show, take and write them as 4.9.3 does.
listenPort and serverChannelMaxIdleTimeSeconds are not here: each server has its own setting for them.
The one definition for the broker (broker.config_keys) and the name server (namesrv.config).  Pure data.
"""

from __future__ import annotations

__all__ = ["NETTY_SERVER_KEPT"]

#: name -> (Java kind, 4.9.3's default as text), in NettyServerConfig's order
NETTY_SERVER_KEPT: dict[str, tuple[str, str]] = {
    "serverWorkerThreads": ("int", "8"),
    "serverCallbackExecutorThreads": ("int", "0"),
    "serverSelectorThreads": ("int", "3"),
    "serverOnewaySemaphoreValue": ("int", "256"),
    "serverAsyncSemaphoreValue": ("int", "64"),
    "serverSocketSndBufSize": ("int", "0"),
    "serverSocketRcvBufSize": ("int", "0"),
    # NettyClientConfig has these two as well (a broker shows each once)
    "writeBufferHighWaterMark": ("int", "0"),
    "writeBufferLowWaterMark": ("int", "0"),
    "serverSocketBacklog": ("int", "1024"),
    "serverPooledByteBufAllocatorEnable": ("bool", "true"),
    "useEpollNativeSelector": ("bool", "false"),
}
