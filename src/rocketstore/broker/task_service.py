"""TaskService: a broker service that is one task on the broker's event loop (started, then cancelled and
awaited on close).  The transaction check, the HA client and the slave's config sync are such services;
a subclass writes :meth:`TaskService._run`."""

from __future__ import annotations

import asyncio

__all__ = ["TaskService"]


class TaskService:
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        raise NotImplementedError
