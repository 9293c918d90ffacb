"""discover() on loopback, and pick_session()'s choices and error messages."""

from __future__ import annotations

import time

import pytest
from mdns_helpers import LOOPBACK, make_advert

from computeshare_desktop.discovery import (NO_SESSION, SERVICE_TYPE, Advertiser,
                                            DiscoveredSession, DiscoveryError,
                                            SessionNotFoundError, describe, discover,
                                            pick_session)
from computeshare_desktop.errors import ComputeShareError, ConfigError


def found(name: str, **fields: object) -> DiscoveredSession:
    advert = make_advert(name=name, **fields)
    return DiscoveredSession(advert=advert, addresses=("192.168.1.7", "127.0.0.1"),
                             instance=f"{name} ({advert.session_id}).{SERVICE_TYPE}")


def test_discover_finds_a_running_hub_quickly() -> None:
    advert = make_advert(name="discover me")
    with Advertiser(advert, interfaces=LOOPBACK, probe=False):
        started = time.monotonic()
        sessions = discover(2.5, interfaces=LOOPBACK)  # ~0.1 s when idle; room for a busy CI
        assert time.monotonic() - started < 3.5
    ours = [s for s in sessions if s.advert.session_id == advert.session_id]
    assert len(ours) == 1 and ours[0].advert == advert
    assert ours[0].address == "tcp://127.0.0.1:5555"
    assert [s.name.casefold() for s in sessions] == sorted(s.name.casefold() for s in sessions)


def test_no_session_says_what_to_do() -> None:
    with pytest.raises(DiscoveryError) as info:
        pick_session([])
    assert str(info.value) == NO_SESSION
    assert "computeshare join HOST:PORT" in NO_SESSION and "multicast" in NO_SESSION
    assert info.value.exit_code == 3 and isinstance(info.value, ComputeShareError)
    with pytest.raises(DiscoveryError):
        pick_session([], "alice")


def test_the_only_open_session_is_chosen() -> None:
    open_one = found("alice")
    full, done = found("bob", joined=2, expected=2), found("carol", state="done")
    assert pick_session([full, open_one, done]) is open_one


def test_several_open_sessions_need_a_name() -> None:
    sessions = [found("alice"), found("bob")]
    with pytest.raises(DiscoveryError, match="--session NAME") as info:
        pick_session(sessions)
    assert "alice" in str(info.value) and "bob" in str(info.value)


def test_only_full_or_done_sessions_are_listed() -> None:
    with pytest.raises(DiscoveryError, match="none is accepting workers") as info:
        pick_session([found("bob", joined=3, expected=2), found("carol", state="done")])
    assert "bob" in str(info.value) and "carol" in str(info.value)


def test_pick_by_name_id_or_instance() -> None:
    alice, bob = found("Alice's desktop"), found("bob", state="done")
    sessions = [alice, bob]
    assert pick_session(sessions, "Alice's desktop") is alice
    assert pick_session(sessions, "alice's DESKTOP") is alice
    assert pick_session(sessions, alice.advert.session_id) is alice
    assert pick_session(sessions, alice.instance) is alice
    assert pick_session(sessions, f"Alice's desktop ({alice.advert.session_id})") is alice
    assert pick_session(sessions, "bob") is bob  # named: chosen even when done


def test_unknown_name_lists_what_was_found() -> None:
    with pytest.raises(SessionNotFoundError) as info:
        pick_session([found("alice"), found("bob")], "carol")
    message = str(info.value)
    assert "'carol'" in message and "alice" in message and "bob" in message
    assert isinstance(info.value, ConfigError) and info.value.exit_code == 2


def test_two_sessions_with_one_name_ask_for_the_id() -> None:
    twins = [found("alice"), found("alice")]
    with pytest.raises(DiscoveryError, match="--session ID") as info:
        pick_session(twins, "alice")
    assert all(t.advert.session_id in str(info.value) for t in twins)


def test_describe_and_address_prefer_the_routable_address() -> None:
    session = found("alice")
    assert session.address == "tcp://192.168.1.7:5555"
    line = describe(session)
    assert line.startswith("alice  (id ") and "1/2 workers, waiting" in line
    assert line.endswith("tcp://192.168.1.7:5555")
