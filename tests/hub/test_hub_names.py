"""Workers on one machine are told apart on the hub, and a machine keeps its name."""

from __future__ import annotations

from computeshare_desktop.hub.membership import Membership


def test_a_second_machine_with_the_same_name_gets_a_number():
    members = Membership(4, heartbeat_timeout_s=6.0)
    first = members.admit("t1", "vm", "CPU", 0.0, key="key-a")
    second = members.admit("t2", "vm", "CPU", 0.0, key="key-b")
    third = members.admit("t3", "vm", "CUDA", 0.0, key="key-c")
    assert [m.name for m in (first, second, third)] == ["vm", "vm #2", "vm #3"]
    assert first.info().key and first.info().key != second.info().key


def test_the_same_machine_rejoining_keeps_its_name():
    members = Membership(2, heartbeat_timeout_s=6.0)
    members.admit("t1", "laptop", "CPU", 0.0, key="key-a")
    members.remove("t1", "left")
    again = members.admit("t2", "laptop", "CPU", 1.0, key="key-a")
    other = members.admit("t3", "laptop", "CPU", 1.0, key="key-b")
    assert (again.name, other.name) == ("laptop", "laptop #2")
