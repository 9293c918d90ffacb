"""Removal that is honest and reversible: a kick refuses a machine for this session only,
"Block this machine" for every session of this hub, and "Allow again" lifts either.

Each test drives a real HubCore through its pairing desk and request handler, as the
transport does, with the allowlist and the blocked machines' file a real session uses.
"""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path

from helpers.hub import HUB_KEY, T0, admit, fake_key, kept_hub, only, pair, reject_code

from computeshare_desktop.hub.outputs import ALLOWED_FILE
from computeshare_desktop.hub.blocked import BlockedMachines, RemovedMachine, now_removed
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Paired

ADDRESS = "lan/w1"  # the address pairing_send gives peer b"w1"


def session(tmp_path: Path, *, resume: bool = False, other_hub: bool = False):
    """A hub as a session builds it: its allowlist file in the output folder, the blocked
    machines in the per-user folder (for this hub's key, or another's)."""
    blocked = BlockedMachines(tmp_path / "user" / "blocked-machines.json",
                              "another-hub" if other_hub else HUB_KEY)
    return kept_hub(tmp_path / "out", blocked=blocked, resume=resume, workers=3), blocked


def test_a_kick_refuses_key_and_address_for_this_session_until_allowed_again(tmp_path):
    hub, blocked = session(tmp_path)
    w1 = admit(hub, b"w1", T0)
    assert hub.kick(w1.welcome.worker_id) is True
    assert reject_code(only(w1.ping(hub, T0))) is RejectCode.BANNED
    again = pair(hub, b"w1", T0 + 1, name="renamed", key=fake_key(b"fresh"))
    assert reject_code(again) is RejectCode.BANNED  # its address, under a new key: no
    assert reject_code(pair(hub, b"w1", T0 + 2)) is RejectCode.BANNED  # nor its own key
    [machine] = hub.allowlist.removed()
    assert (machine.name, machine.address, machine.blocked) == ("w1", ADDRESS, False)
    assert blocked.machines() == []  # the hub's other sessions never hear of it

    assert hub.allow_again(w1.key) is True and hub.allow_again(w1.key) is False
    assert hub.allowlist.removed() == []
    assert reject_code(only(w1.ping(hub, T0 + 3))) is RejectCode.NOT_PAIRED  # the PIN again
    assert isinstance(pair(hub, b"w1", T0 + 4), Paired)
    assert w1.key in hub.allowlist and hub.allowlist.refusal(w1.key) is None


def test_a_resumed_or_new_session_does_not_inherit_a_kick(tmp_path):
    hub, _ = session(tmp_path)
    w1, w2 = admit(hub, b"w1", T0), admit(hub, b"w2", T0)
    hub.kick(w1.welcome.worker_id)
    resumed, _ = session(tmp_path, resume=True)  # the same folder, run again
    assert resumed.allowlist.refusal(w1.key) is None and w1.key not in resumed.allowlist
    assert w2.key in resumed.allowlist  # those who stayed are still paired
    assert isinstance(pair(resumed, b"w1", T0 + 1), Paired)  # the removed one: with the PIN
    fresh, _ = session(tmp_path)
    assert fresh.allowlist.removed() == [] and isinstance(pair(fresh, b"w1", T0), Paired)


def test_a_blocked_machine_is_refused_by_every_later_session_until_allowed(tmp_path):
    hub, blocked = session(tmp_path)
    w1 = admit(hub, b"w1", T0)
    assert hub.kick(w1.welcome.worker_id, block=True)
    assert reject_code(only(w1.ping(hub, T0))) is RejectCode.BLOCKED
    assert [m.key for m in blocked.machines()] == [w1.key]

    later, _ = session(tmp_path)  # a new session of the same hub
    assert reject_code(pair(later, b"w1", T0)) is RejectCode.BLOCKED
    assert reject_code(pair(later, b"w1", T0, name="x", key=fake_key(b"new"))) is \
        RejectCode.BLOCKED  # its address too
    assert isinstance(pair(later, b"w2", T0), Paired)  # nobody else
    [machine] = later.allowlist.removed()
    assert machine.blocked and machine.name == "w1"
    elsewhere, _ = session(tmp_path / "x", other_hub=True)  # another hub's file: no one
    assert elsewhere.allowlist.removed() == []

    assert later.allow_again(w1.key)
    assert blocked.machines() == [] and isinstance(pair(later, b"w1", T0 + 1), Paired)
    assert session(tmp_path)[0].allowlist.removed() == []


def test_the_allowlist_file_keeps_keys_not_removals(tmp_path):
    hub, _ = session(tmp_path)
    w1, w2 = admit(hub, b"w1", T0), admit(hub, b"w2", T0)
    hub.kick(w1.welcome.worker_id)
    kept = json.loads((tmp_path / "out" / ALLOWED_FILE).read_text(encoding="utf-8"))
    assert kept == {"keys": {w2.key: "w2"}, "addresses": {w1.key: ADDRESS,
                                                         w2.key: "lan/w2"}}
    assert hub.allowlist.address_refusal(ADDRESS) is RejectCode.BANNED
    assert hub.allowlist.address_refusal("lan/w3") is None


def test_a_full_disk_during_pairing_and_kick_warns_once_and_the_session_goes_on(
        tmp_path, monkeypatch):
    """Every file the allowlist's changes go to fails (ENOSPC): pairing, joining, a kick
    with block and Allow again all still work in the session, and each list that could not
    be written is warned of once (a DiskError event), never raised into the hub's loop."""
    from helpers.hub import PIN

    from computeshare_desktop.events import DiskError
    from computeshare_desktop.hub import HubConfig, HubSession
    from computeshare_desktop.hub import outputs, paired_machines
    from computeshare_desktop.hub import blocked as blocked_module
    from computeshare_desktop.hub.paired_machines import PairedMachines

    events: list = []
    paired = PairedMachines(tmp_path / "user" / "paired.json", HUB_KEY)
    blocked = BlockedMachines(tmp_path / "user" / "blocked.json", HUB_KEY)
    hub = HubSession(HubConfig(workers=3, rounds=5, batch_size=8, eval_every=0), pin=PIN,
                     hub_key=HUB_KEY, out_dir=tmp_path / "out", on_event=events.append,
                     paired=paired, blocked=blocked)

    def full(path, data, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")
    for module in (outputs, paired_machines, blocked_module):
        monkeypatch.setattr(module, "atomic_write", full)
    try:
        w1 = admit(hub.core, b"w1", T0)  # through the core, then the session keeps it
        hub._after()
        w2 = admit(hub.core, b"w2", T0)
        hub._after()
        assert hub.kick(w1.welcome.worker_id, block=True)
        assert reject_code(only(w1.ping(hub.core, T0))) is RejectCode.BLOCKED  # it holds
        assert hub.allow_again(w1.key)
        assert isinstance(pair(hub.core, b"w3", T0), Paired)
        hub._after()
        assert w2.key in hub.core.allowlist and len(hub.core.members) == 1
        warned = sorted(e.what for e in events if isinstance(e, DiskError))
        assert warned == ["blocked machines", "list of allowed machines", "paired machines"]
        assert all("No space" in e.error for e in events if isinstance(e, DiskError))
        assert hub.disk_errors > len(warned)  # counted every time, warned once each
    finally:
        hub.close()


def test_a_damaged_blocked_file_lists_no_one_says_why_and_is_kept(tmp_path, caplog):
    path = tmp_path / "blocked-machines.json"
    store = BlockedMachines(path, HUB_KEY)
    cases = {"not json": "JSON is malformed", "[1, 2]": "Expected `object`, got `array`",
             json.dumps({"hub": HUB_KEY, "blocked": [1]}): "at `$.blocked`",
             json.dumps({"hub": HUB_KEY, "blocked": {"k": "x"}}): "at `$.blocked[...]`",
             json.dumps({"hub": HUB_KEY, "blocked": {"k": {"when": "noon"}}}):
             "Expected `float`, got `str` - at `$.blocked[...].when`"}
    for text, said in cases.items():
        path.write_text(text, encoding="utf-8")
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert store.machines() == []
        assert said in caplog.text
        assert text in [kept.read_text(encoding="utf-8")
                        for kept in tmp_path.glob(path.name + ".damaged-*")]
    store.block(now_removed("k", "n", "", True))
    assert [m.key for m in store.machines()] == ["k"]


def test_a_blocked_file_written_before_reads_as_it_did(tmp_path):
    path = tmp_path / "blocked-machines.json"  # as the first version wrote it
    path.write_text(json.dumps({"hub": HUB_KEY, "blocked": {
        "k1": {"address": "192.168.1.20", "name": "laptop", "when": 5},
        "k2": {"address": "", "name": "desk", "when": 7.5}}}, indent=1, sort_keys=True),
        encoding="utf-8")
    assert BlockedMachines(path, HUB_KEY).machines() == [
        RemovedMachine("k2", "desk", "", True, 7.5),
        RemovedMachine("k1", "laptop", "192.168.1.20", True, 5.0)]
    assert BlockedMachines(path, "another-hub").machines() == []
    assert not list(tmp_path.glob("*.damaged-*"))
