"""When every worker refused the session's model: the host hears it at once, and a host
on the command line ends once nobody else comes. Pure: keys and ``now`` in, events out.

The hub core tells the watch of each machine that comes (a JOIN, a pairing attempt), each
that is admitted and each that refuses the model (GRAPH_REFUSED) or is refused it (another
torch release, at the door). When no worker is left and the last word of every machine
that came was a refusal, the watch says so (AllRefused) on that refusal; if nobody else
comes within ``grace_s`` of it, it says that too, once (RefusedWaitOver). Workers that are
merely slow to come never start it: until one refuses, the hub waits as long as it takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import AllRefused, Event, RefusedWaitOver

# Long enough for a second worker typing the PIN (each pairing attempt restarts it), short
# enough that a script hosting a model no worker takes ends within the minute.
REFUSED_GRACE_S = 60.0


@dataclass(slots=True)
class RefusalWatch:
    """Who refused the model, and whether the host has been told that nobody trains it."""

    grace_s: float = REFUSED_GRACE_S
    refused: dict[str, bool] = field(default_factory=dict)  # key -> its last word refused
    last: tuple[str, str] = ("", "")  # the latest refusal: the worker's name and why
    since: float | None = None  # every machine refused: since then, or the latest arrival
    over: bool = False  # RefusedWaitOver was said for this wait

    def came(self, now: float) -> None:
        """A machine asks to pair or join: someone else is coming, so the wait restarts."""
        if self.since is not None:
            self.since = now

    def admitted(self, key: str) -> None:
        """A machine joined: its last word is no refusal (nor, then, everyone's)."""
        self.refused[key] = False
        self.since, self.over = None, False

    def refusal(self, key: str, name: str, reason: str, now: float, live: int
                ) -> list[Event]:
        """``key`` refused the model (or was refused it); ``live``: workers still in the
        session. AllRefused when nobody is left and every machine that came refused."""
        self.refused[key] = True
        self.last = (name, reason)
        if live or not all(self.refused.values()):
            return []
        self.since, self.over = now, False
        return [AllRefused(len(self.refused), name, reason, self.grace_s)]

    def tick(self, now: float, live: int) -> list[Event]:
        """RefusedWaitOver, once, when nobody came within ``grace_s`` of the last refusal
        or arrival."""
        if self.since is None or self.over or now - self.since < self.grace_s:
            return []
        if live:  # a machine joined since (admitted resets it first: belt and braces)
            self.since = None
            return []
        self.over = True
        return [RefusedWaitOver(len(self.refused), *self.last, self.grace_s)]
