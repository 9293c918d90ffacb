"""Paired machines: a key that paired with the PIN once is let into the hub's later sessions
without it, until the host removes it, a kick forgets it, or the feature is off."""

from __future__ import annotations

import json
import logging
import stat
import sys
from pathlib import Path

import pytest
from helpers.hub import (HUB_KEY, T0, fake_key, join, kept_hub, only, pair,
                         reject_code, send)

from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.paired_machines import PairedMachine, PairedMachines
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Join, Paired, Welcome

LAPTOP = b"laptop"


def session(folder: Path, paired: PairedMachines | None, resume: bool = False) -> HubCore:
    """A hub core whose allowlist is built and kept as HubSession does, in ``folder``."""
    return kept_hub(folder, paired=paired, resume=resume)


def pairs_and_joins(hub: HubCore) -> None:
    assert isinstance(pair(hub, LAPTOP, T0, source="192.168.1.20"), Paired)
    assert isinstance(join(hub, LAPTOP, T0), Welcome)


def refused_without_pin(hub: HubCore) -> bool:
    return reject_code(only(send(hub, LAPTOP, Join("laptop", "cpu", "2"), T0,
                                 key=fake_key(LAPTOP)))) is RejectCode.NOT_PAIRED


def test_a_paired_machine_joins_the_next_session_of_the_same_hub_without_the_pin(tmp_path):
    paired = PairedMachines(tmp_path / "paired.json", HUB_KEY)
    pairs_and_joins(session(tmp_path / "one", paired))
    (machine,) = paired.machines()
    assert (machine.key, machine.name, machine.address) == (fake_key(LAPTOP), "laptop",
                                                            "192.168.1.20")
    second = session(tmp_path / "two", paired)  # a new session: its own folder, a new PIN
    assert isinstance(join(second, LAPTOP, T0), Welcome)  # no pairing at all
    # The host removes it from the list: the session after needs the PIN again, and so
    # does a resumed one that had let it in
    assert paired.forget(fake_key(LAPTOP)) is True and paired.machines() == []
    assert refused_without_pin(session(tmp_path / "three", paired))
    assert refused_without_pin(session(tmp_path / "two", paired, resume=True))
    # Pairing with the PIN again lists it again
    pairs_and_joins(session(tmp_path / "four", paired))
    assert [m.key for m in paired.machines()] == [fake_key(LAPTOP)]


def test_a_kicked_machine_is_forgotten_and_never_let_in_again_without_the_pin(tmp_path):
    paired = PairedMachines(tmp_path / "paired.json", HUB_KEY)
    first = session(tmp_path / "one", paired)
    pairs_and_joins(first)
    first.allowlist.add(fake_key(b"desk"), "this machine")  # the host's own: not paired
    second = session(tmp_path / "two", paired)
    welcome = join(second, LAPTOP, T0)
    assert second.kick(welcome.worker_id)
    assert paired.machines() == [] and fake_key(LAPTOP) in paired.removed()
    assert refused_without_pin(session(tmp_path / "three", paired))
    assert fake_key(b"desk") not in session(tmp_path / "three", paired).allowlist


def test_without_the_list_a_new_session_starts_with_nobody(tmp_path):
    paired = PairedMachines(tmp_path / "paired.json", HUB_KEY)
    pairs_and_joins(session(tmp_path / "one", paired))
    assert refused_without_pin(session(tmp_path / "two", None))  # the feature off


def test_the_list_belongs_to_one_hub_key_and_the_switch_is_kept(tmp_path):
    path = tmp_path / "paired.json"
    paired = PairedMachines(path, HUB_KEY)
    paired.remember(fake_key(LAPTOP), "laptop", None)
    assert PairedMachines(path, fake_key(b"a new hub")).machines() == []  # key file remade
    assert [m.name for m in PairedMachines(path).machines()] == ["laptop"]  # the app's view
    assert paired.enabled
    PairedMachines(path).set_enabled(False)
    assert not paired.enabled and [m.name for m in paired.machines()] == ["laptop"]
    assert json.loads(path.read_text(encoding="utf-8"))["hub"] == HUB_KEY
    if sys.platform != "win32":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("not json", encoding="utf-8")
    assert paired.machines() == [] and paired.enabled


@pytest.mark.parametrize("garbage, said", [
    ("[1, 2]", "Expected `object`, got `array`"),
    ('{"machines": [1]}', "got `array` - at `$.machines`"),
    ('{"machines": {"k": 3}, "removed": []}', "got `int` - at `$.machines[...]`"),
    ('{"machines": {"k": {"paired_at": "noon", "name": "laptop"}}}',
     "Expected `float`, got `str` - at `$.machines[...].paired_at`")])
def test_a_damaged_file_lists_no_one_says_why_and_is_kept(tmp_path, caplog, garbage, said):
    path = tmp_path / "paired.json"
    path.write_text(garbage, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert PairedMachines(path, HUB_KEY).machines() == []
        assert PairedMachines(path, HUB_KEY).enabled  # the default, said once
    assert said in caplog.text and len(caplog.records) == 1
    [kept] = tmp_path.glob("paired.json.damaged-*")
    assert kept.read_text(encoding="utf-8") == garbage
    PairedMachines(path, HUB_KEY).remember(fake_key(LAPTOP), "laptop", None)  # written anew
    assert [m.name for m in PairedMachines(path, HUB_KEY).machines()] == ["laptop"]


def test_a_file_written_before_reads_as_it_did(tmp_path):
    path = tmp_path / "paired.json"  # as the first version wrote it (sorted keys)
    path.write_text(json.dumps({"enabled": False, "hub": HUB_KEY, "machines": {
        "k1": {"address": "192.168.1.20", "name": "laptop", "paired_at": 20.5},
        "k2": {"address": "", "name": "desk", "paired_at": 30}}, "removed": ["k3"]},
        indent=1, sort_keys=True), encoding="utf-8")
    paired = PairedMachines(path, HUB_KEY)
    assert paired.machines() == [PairedMachine("k2", "desk", "", 30.0),
                                 PairedMachine("k1", "laptop", "192.168.1.20", 20.5)]
    assert paired.removed() == {"k3"} and not paired.enabled
    assert not list(tmp_path.glob("*.damaged-*"))
