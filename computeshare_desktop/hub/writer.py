"""Checkpoints written off the serving thread, in order, as durably as before.

The serving thread takes the snapshot (``copy_tensors``: every tensor cloned, so the next
rounds may change the model at once) and hands it over; a thread of the writer's own then
writes it with the function it was given (``OutputDir.save_checkpoint``, through
``files.atomic_write``: fsync the file, rename, fsync the folder), so a kill -9 at any
moment leaves the previous checkpoint or the new one, whole.

Writes run one at a time in the order they were asked for, and one that has not started
when a newer one is asked for is dropped: a later checkpoint is never overwritten by an
earlier one, and a disk slower than the rounds holds at most one snapshot waiting (as
evaluations do in ``HubSession``). What failed goes back to the serving thread
(``collect``), which reports it like any other disk error.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import torch


def copy_tensors(state: Any) -> Any:
    """``state`` with every tensor in it (in dicts, lists and tuples) replaced by a copy."""
    if isinstance(state, torch.Tensor):
        return state.detach().clone()
    if isinstance(state, dict):
        return {k: copy_tensors(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(copy_tensors(v) for v in state)
    return state


class CheckpointWriter:
    """Writes snapshots on a thread of its own, newest last; errors come back on ``collect``."""

    def __init__(self, thread_name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
        self._pending: list[tuple[int, Future[object]]] = []

    def submit(self, version: int, write: Callable[[Any], object], snapshot: Any) -> None:
        """Write ``snapshot`` (of ``version``, taken by the caller) with ``write``, after
        the write running now; a waiting one is dropped (this one supersedes it)."""
        self._pending = [(v, f) for v, f in self._pending if not f.cancel()]
        self._pending.append((version, self._pool.submit(write, snapshot)))

    def pending(self) -> list[int]:
        """The versions being written or waiting, oldest first."""
        return [v for v, _ in self._pending]

    def collect(self, block: bool = False) -> list[tuple[int, OSError]]:
        """The finished writes that failed, by version, since the last call; ``block``
        waits for every pending write first. Anything but an OSError is a bug: raised."""
        failed = []
        while self._pending and (block or self._pending[0][1].done()):
            version, future = self._pending.pop(0)
            exc = future.exception()
            if isinstance(exc, OSError):
                failed.append((version, exc))
            elif exc is not None:
                raise exc
        return failed

    def close(self) -> list[tuple[int, OSError]]:
        """Finish the pending writes (a newer checkpoint is worth the wait), end the thread
        (idempotent); the writes that failed."""
        failed = self.collect(block=True)
        self._pool.shutdown(wait=True)
        return failed
