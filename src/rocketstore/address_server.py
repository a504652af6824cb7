"""The name server address server: an HTTP endpoint a client or broker given no name server address asks
for the list (``host:port;host:port``), as 4.9.3's TopAddressing does.

The list is read from ``http://<domain>/rocketmq/<subgroup>`` (``<domain>:8080`` when the domain names no
port; 4.9.3's MixAll.getWSAddr, whose domain defaults to ``jmenv.tbsite.net`` and subgroup to ``nsaddr``); a
unit name makes it ``.../<subgroup>-<unit>?nofix=1``.  Only a 200 answer counts: its first line, trimmed.  A
failed or other answer, and (unlike 4.9.3, which then empties its list) an empty one, keep the list as it was.
4.9.3 asks at start, then 10 s later and every 2 minutes (a broker with fetchNamesrvAddrByAddressServer
only from 10 s on: ours asks at start too, in the background, so that it registers at once);
:class:`AddressServerWatcher` asks on that schedule.  The fetch is a blocking urllib
GET run in a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Callable

__all__ = ["DEFAULT_DOMAIN", "DEFAULT_SUBGROUP", "NAMESRV_DOMAIN_ENV", "NAMESRV_DOMAIN_SUBGROUP_ENV",
           "AddressServerWatcher", "address_server_url", "domain_from_env", "fetch_namesrv_addr"]

log = logging.getLogger(__name__)

#: 4.9.3's defaults (MixAll.DEFAULT_NAMESRV_ADDR_LOOKUP, and the subgroup's)
DEFAULT_DOMAIN = "jmenv.tbsite.net"
DEFAULT_SUBGROUP = "nsaddr"
#: the environment variables a Python client reads where a Java one reads the system properties
#: rocketmq.namesrv.domain and rocketmq.namesrv.domain.subgroup
NAMESRV_DOMAIN_ENV = "ROCKETMQ_NAMESRV_DOMAIN"
NAMESRV_DOMAIN_SUBGROUP_ENV = "ROCKETMQ_NAMESRV_DOMAIN_SUBGROUP"
#: the first fetch after the one at start, and the period after it (MQClientInstance's schedule, 4.9.3)
FIRST_PERIOD_S = 10.0
PERIOD_S = 120.0
#: the bound of one fetch (connect, then read: TopAddressing's 3000 ms)
FETCH_TIMEOUT_S = 3.0
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def domain_from_env() -> tuple[str | None, str | None]:
    """(domain, subgroup) from the environment (None where unset or blank)."""
    return (os.environ.get(NAMESRV_DOMAIN_ENV, "").strip() or None,
            os.environ.get(NAMESRV_DOMAIN_SUBGROUP_ENV, "").strip() or None)


def address_server_url(domain: str | None = None, subgroup: str | None = None,
                       unit_name: str | None = None) -> str:
    """The URL the list is read from (see the module's docstring)."""
    domain = domain or DEFAULT_DOMAIN
    host = domain if domain.find(":") > 0 else f"{domain}:8080"
    url = f"http://{host}/rocketmq/{subgroup or DEFAULT_SUBGROUP}"
    if unit_name and unit_name.strip():
        url += f"-{unit_name}?nofix=1"
    return url


def fetch_namesrv_addr(url: str, timeout_s: float = FETCH_TIMEOUT_S) -> str | None:
    """The list the address server at *url* answers (its answer's first line, trimmed); None when it cannot
    be asked or does not answer 200 (logged).  Blocking: run it in a thread."""
    request = urllib.request.Request(url, headers={"Client-Version": "V4_9_3"})
    try:
        # no proxy from the environment (HTTP_PROXY): 4.9.3's HttpURLConnection reads none either
        with _OPENER.open(request, timeout=timeout_s) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        log.warning("fetch name server address from %s failed. statusCode=%d", url, exc.code)
        return None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        # URLError, a timeout, a refused connection, a bad URL; a peer that does not speak HTTP (a name
        # server's port given as the domain) or cuts its answer short
        log.warning("fetch name server address from %s failed: %s", url, exc)
        return None
    text = text.strip()
    for sep in ("\r", "\n"):
        text = text.split(sep, 1)[0]
    return text


class AddressServerWatcher:
    """Reads the name server list from an address server on 4.9.3's schedule and hands each new one to
    *on_change* (on the loop; it must not raise): at :meth:`fetch_now` (a client's start), then after
    FIRST_PERIOD_S and every PERIOD_S while :meth:`start`'s task runs."""

    def __init__(self, url: str, on_change: Callable[[list[str]], object]) -> None:
        self.url = url
        self.on_change = on_change
        #: the last list read (what 4.9.3 keeps as nameSrvAddr): a list read again the same is not handed on
        self.addrs: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def fetch_now(self) -> list[str]:
        """Ask the address server once; the list read, or the one kept when it gave none."""
        text = await asyncio.to_thread(fetch_namesrv_addr, self.url)
        addrs = list(dict.fromkeys(a.strip() for a in (text or "").split(";") if a.strip()))
        if not addrs:
            if text is not None:
                log.warning("the address server %s answered no name server address: the list is kept",
                            self.url)
            return self.addrs
        if addrs != self.addrs:
            log.info("name server address changed, old=%s, new=%s", ";".join(self.addrs), ";".join(addrs))
            self.addrs = addrs
            self.on_change(addrs)
        return self.addrs

    def start(self, *, at_once: bool = False) -> None:
        """Ask again on the schedule, on the running loop (once: a second call does nothing); *at_once*: the
        first time now rather than FIRST_PERIOD_S from now."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(0.0 if at_once else FIRST_PERIOD_S))

    async def _loop(self, delay: float) -> None:
        while True:
            await asyncio.sleep(delay)
            delay = PERIOD_S
            try:
                await self.fetch_now()
            except Exception:  # never ends the schedule
                log.exception("fetch name server address from %s failed", self.url)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
