"""What hosting and joining share: a session's own thread, the events it reports, and the
log scope its name gives. No Qt."""

from __future__ import annotations

import itertools
import queue
import threading
from dataclasses import dataclass
from typing import Callable, Literal, TypeVar

from ..events import Event

SERIAL = itertools.count(1)  # numbers the services' threads: cs-hub-1, cs-worker-2...
T = TypeVar("T")
S = TypeVar("S", bound="ServiceThread")
# Where an event came from: "hub" (a host's hub), "local" (a host's own worker), "worker"
# (a joined worker's session) or "feed" (the hub's events as a worker hears them).
Source = Literal["hub", "local", "worker", "feed"]


@dataclass(frozen=True, slots=True)
class Tagged:
    """An event and where it came from (``Source``)."""

    source: Source
    event: Event


def in_scope(thread_name: str, scope: str) -> bool:
    """True for the thread called ``scope`` and the threads it started (named scope/...)."""
    return thread_name == scope or thread_name.startswith(scope + "/")


def drain_queue(events: "queue.SimpleQueue[T]") -> list[T]:
    """Everything in ``events`` right now, without blocking."""
    items: list[T] = []
    while True:
        try:
            items.append(events.get_nowait())
        except queue.Empty:
            return items


class ServiceThread:
    """One session on its own thread. Its events go to the callback when there is one (run
    on the service's threads), else to ``events`` for views that drain them: never to a
    queue nobody reads, which would grow for as long as the session runs (a CLI host
    serving for days). Every thread of the session is named after this one (``scope``),
    so a log handler can keep to one session."""

    def __init__(self, source: Source, *, name: str | None = None,
                 events: "queue.SimpleQueue[Tagged] | None" = None,
                 on_event: Callable[[Tagged], None] | None = None) -> None:
        self.source = source
        self.events: queue.SimpleQueue[Tagged] = events or queue.SimpleQueue()
        self._on_event = on_event
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=name or f"cs-{source}-{next(SERIAL)}")

    def _run(self) -> None:
        raise NotImplementedError

    def start(self: S) -> S:
        """Start the session's thread; returns self."""
        self._thread.start()
        return self

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the thread to end by itself; True when it has."""
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        """True while the session's thread is alive."""
        return self._thread.is_alive()

    @property
    def scope(self) -> str:
        """The name of the session's thread, after which all its threads are named."""
        return self._thread.name

    def drain(self) -> list[Tagged]:
        """Every event queued since the last call."""
        return drain_queue(self.events)

    def _post(self, event: Event, source: Source | None = None) -> None:
        tagged = Tagged(source or self.source, event)
        if self._on_event is not None:
            self._on_event(tagged)
        else:
            self.events.put(tagged)
