"""Choose the session to join among those discovered; every error says what to do next. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from .advert import SERVICE_TYPE
from .browser import DiscoveredSession
from .errors import DiscoveryError, SessionNotFoundError

NO_SESSION = ("no ComputeShare session found on the LAN: is the hub running? multicast may be "
              "blocked; give the hub's address instead: computeshare join HOST:PORT")


def describe(session: DiscoveredSession) -> str:
    """One line for a person: name, id, host, model, workers, state and address."""
    advert = session.advert
    status = "done" if advert.done else "full" if advert.full else advert.state
    if advert.rounds and not advert.done:
        status += f", round {advert.round}/{advert.rounds}"
    return (f"{advert.name}  (id {advert.session_id}, host {advert.host}, {advert.model} on "
            f"{advert.dataset}, {advert.joined}/{advert.expected} workers, {status})  "
            f"{session.address}")


def pick_session(sessions: Sequence[DiscoveredSession],
                 name: str | None = None) -> DiscoveredSession:
    """Return the session to join: the one ``name`` designates, else the only open one.

    ``name`` matches a session's name, id or mDNS instance name (exactly, then ignoring
    case). Without it, the one session that is neither full nor done is chosen.

    Raises:
        DiscoveryError: no session at all, none open, or several that fit.
        SessionNotFoundError: sessions exist but none is called ``name``.
    """
    if not sessions:
        raise DiscoveryError(NO_SESSION)
    if name is not None:
        return _by_name(sessions, name)
    accepting = [s for s in sessions if s.advert.accepting]
    if len(accepting) == 1:
        return accepting[0]
    if not accepting:
        raise DiscoveryError(f"found {len(sessions)} ComputeShare session(s) on the LAN, but "
                             f"none is accepting workers (full or done):\n{_listing(sessions)}\n"
                             "use --session NAME to pick one anyway, or start a new hub")
    raise DiscoveryError(f"found {len(accepting)} ComputeShare sessions accepting workers; "
                         f"choose one with --session NAME:\n{_listing(accepting)}")


def _by_name(sessions: Sequence[DiscoveredSession], name: str) -> DiscoveredSession:
    matches = [s for s in sessions if name in _names(s)]
    if not matches:
        wanted = name.casefold()
        matches = [s for s in sessions if wanted in {n.casefold() for n in _names(s)}]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionNotFoundError(f"no ComputeShare session called {name!r} on the LAN; "
                                   f"found:\n{_listing(sessions)}")
    raise DiscoveryError(f"{len(matches)} sessions are called {name!r}; choose one by its id "
                         f"with --session ID:\n{_listing(matches)}")


def _names(session: DiscoveredSession) -> set[str]:
    label = session.instance.removesuffix("." + SERVICE_TYPE)
    return {session.name, session.advert.session_id, session.instance, label}


def _listing(sessions: Sequence[DiscoveredSession]) -> str:
    return "\n".join(f"  {describe(s)}" for s in sessions)
