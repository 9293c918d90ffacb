"""Kicking a worker revokes its key at once; paired keys are reused without the PIN."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import sys

import pytest

from computeshare_desktop.errors import ConfigError, RejectedError, RemovedError
from computeshare_desktop.events import RoundClosed, WorkerLeft
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.transport import Identity, KnownHubs, identity_path, load_or_create
from helpers.net import EventListener, RunningHub, WorkerThread, pair, wait_for


def test_kick_revokes_key_for_requests_and_events(tmp_path):
    hub = RunningHub(tmp_path, workers=2, rounds=100000, batch_size=8, eval_every=0,
                     deadline_floor_s=0.5)
    keep, kicked = WorkerThread(hub.port, "keep"), WorkerThread(hub.port, "kicked")
    listener = None
    try:
        wait_for(lambda: hub.session.server.version >= 5, 60, "training")
        _, hub_key = pair(hub.port, "246810", "kicked", kicked.identity)  # same key, re-paired
        listener = EventListener(hub.ports.events, kicked.identity, hub_key)
        wait_for(lambda: listener.of_kind(RoundClosed), 20, "events reach a paired listener")
        members = {m.name: m for m in hub.session.core.members.members()}
        hub.server.kick(members["kicked"].worker_id)
        kicked.join(30)
        assert isinstance(kicked.error, RemovedError)  # told, on its open connection
        assert kicked.error.code is RejectCode.BANNED
        assert kicked.identity.public not in hub.session.core.allowlist
        assert [e for e in hub.of_kind(WorkerLeft) if e.reason == "kicked"]
        # The event stream was restarted: the kicked key cannot reconnect to it.
        seen = len(listener.raw)
        version = hub.session.server.version
        wait_for(lambda: hub.session.server.version >= version + 20, 60, "training goes on")
        assert len(listener.raw) <= seen + 2  # at most what was in flight at the kick
        assert keep.thread.is_alive() and keep.error is None
        # Kick means ban: the same machine cannot pair again, even with the right PIN.
        again = WorkerThread(hub.port, "kicked", identity=kicked.identity)
        again.join(30)
        assert isinstance(again.error, RejectedError) and again.error.code is RejectCode.BANNED
        assert kicked.identity.public not in hub.session.core.allowlist
    finally:
        if listener is not None:
            listener.close()
        keep.close()
        kicked.close()
        hub.close()


def test_reconnecting_worker_reuses_its_key_without_pin(tmp_path):
    hub = RunningHub(tmp_path, workers=1, rounds=30, batch_size=8, eval_every=0)
    identity = Identity.generate()
    first = WorkerThread(hub.port, "w", identity=identity)
    try:
        wait_for(lambda: hub.session.server.version >= 3, 60, "training")
        first.close()  # leaves (BYE): shard free, key still paired
        wait_for(lambda: len(hub.session.core.members) == 0, 10, "worker gone")
        # It remembers the hub's key: no pairing, so even a wrong PIN does not matter.
        again = WorkerThread(hub.port, "w", identity=identity, pin="wrong-pin",
                             hub_key=hub.identity.public)
        again.join(120)
        assert again.error is None, again.error
        assert again.result.pushed > 0
    finally:
        first.close()
        hub.close()


@pytest.mark.skipif(sys.platform == "win32",
                    reason="POSIX modes; on Windows an ACL does this (tests/test_acl.py)")
def test_identity_files_are_private_and_stable(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    path = identity_path("worker", "my laptop/1")
    assert path.parent == tmp_path / "identity" and "/" not in path.name
    first = load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_or_create(path) == first
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="readable by other users"):
        load_or_create(path)


def test_key_files_load_where_modes_mean_nothing(tmp_path, monkeypatch):
    """On Windows every file reads 0o666: the mode check is off there, or the second launch
    would refuse the key the first one wrote."""
    from computeshare_desktop.transport import keys

    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    path = identity_path("hub")
    first = load_or_create(path)
    os.chmod(path, 0o666)  # what Windows reports
    monkeypatch.setattr(keys, "CHECK_MODE", False)
    assert load_or_create(path) == first
    monkeypatch.setattr(keys, "CHECK_MODE", True)
    with pytest.raises(ConfigError, match="readable by other users"):
        load_or_create(path)


def test_a_key_file_written_before_loads_and_a_damaged_one_says_what_is_wrong(tmp_path):
    path = tmp_path / "worker.key"
    first = Identity.generate()
    path.write_text(json.dumps({"public": first.public, "secret": first.secret}), encoding="utf-8")
    os.chmod(path, 0o600)
    assert load_or_create(path) == first  # the format the first version wrote
    path.write_text(json.dumps({"public": first.public, "secret": 5}), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("Expected `str`, got `int` - at `$.secret`")):
        load_or_create(path)
    path.write_text(json.dumps({"public": first.public}), encoding="utf-8")
    with pytest.raises(ConfigError, match="missing required field `secret`"):
        load_or_create(path)  # never replaced by a new key on its own


def test_known_hubs_read_as_written_and_a_damaged_file_says_why_and_is_kept(tmp_path, caplog):
    key_file = tmp_path / "worker-laptop.key"
    known = KnownHubs(key_file)
    known.path.write_text(json.dumps({"HUBKEY": ["10.0.0.2:7070", "lan:7070"]}, indent=1,
                                     sort_keys=True), encoding="utf-8")  # as first written
    assert known.key_for("lan:7070") == "HUBKEY" and known.key_for("x:1") is None
    known.path.write_text(json.dumps({"HUBKEY": "10.0.0.2:7070"}), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert known.key_for("10.0.0.2:7070") is None  # it pairs with the PIN again
    assert "Expected `array`, got `str` - at `$[...]`" in caplog.text
    [kept] = tmp_path.glob(known.path.name + ".damaged-*")
    assert kept.read_text(encoding="utf-8") == json.dumps({"HUBKEY": "10.0.0.2:7070"})
    known.remember("OTHER", "lan:7070")
    assert KnownHubs(key_file).key_for("lan:7070") == "OTHER"
