"""A round and a member change only through their own methods.

Every change to a ``Round`` is one of its methods (hub/rounds.py), every change to a
``Member`` one of its methods (hub/membership.py), so ``grep`` finds all of them in one
class. These records never leave ``hub/`` (events carry ``WorkerInfo`` copies; the
import contract "hub-records" in pyproject.toml keeps every other package from importing
them), so the check reads the hub's other modules: none assigns to a field of either
record or changes one of its containers, whatever the variable holding it is called.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import computeshare_desktop
from computeshare_desktop.hub.membership import Member
from computeshare_desktop.hub.rounds import Round

ROOT = Path(computeshare_desktop.__file__).parent
OWNERS = {"hub/rounds.py", "hub/membership.py"}
RECORDS = (Round, Member)
FIELDS = {f.name for record in RECORDS for f in dataclasses.fields(record)}
CONTAINERS = {f.name for record in RECORDS for f in dataclasses.fields(record)
              if f.default_factory is not dataclasses.MISSING}
MUTATORS = {"add", "discard", "remove", "pop", "popitem", "clear", "update", "setdefault",
            "append", "extend", "insert", "__setitem__", "__delitem__"}


def _field_of_other(node: ast.AST, names: set[str]) -> bool:
    """``node`` is ``<expr>.<name>`` for one of ``names``, where ``<expr>`` is not ``self``
    (a class's own fields are its business: no other class holds a Round as ``self``)."""
    return (isinstance(node, ast.Attribute) and node.attr in names
            and not (isinstance(node.value, ast.Name) and node.value.id == "self"))


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        found = [node.target]
    elif isinstance(node, ast.Delete):
        found = list(node.targets)
    else:
        return []
    flat: list[ast.AST] = []
    while found:
        target = found.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            found.extend(target.elts)
        else:
            flat.append(target)
    return flat


def mutations(source: str) -> list[str]:
    """The lines of ``source`` that change a field of a Round or a Member."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for target in _targets(node):
            if _field_of_other(target, FIELDS) or (
                    isinstance(target, ast.Subscript)
                    and _field_of_other(target.value, CONTAINERS)):
                found.append(ast.unparse(target))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in MUTATORS and _field_of_other(node.func.value, CONTAINERS):
            found.append(ast.unparse(node))
    return found


def test_only_the_records_own_methods_change_them():
    offenders = {rel: found for path in sorted((ROOT / "hub").rglob("*.py"))
                 if (rel := path.relative_to(ROOT).as_posix()) not in OWNERS
                 and (found := mutations(path.read_text(encoding="utf-8")))}
    assert offenders == {}


def test_the_check_catches_the_ways_a_record_was_changed_before():
    """What hub/core.py and hub/schedule.py wrote before the records owned their changes."""
    old = """
self.round.bytes_in += sum(len(f) for f in frames)
member.ready = True
member.rejected += 1
self.round.served.add(member.worker_id)
self.round.plan = {}
rnd.contributions[shard] = contribution
m.busy, m.missed = 0.5, 0
del self.round.plan[3]
"""
    assert sorted(mutations(old)) == sorted([
        "self.round.bytes_in", "member.ready", "member.rejected",
        "self.round.served.add(member.worker_id)", "self.round.plan",
        "rnd.contributions[shard]", "m.missed", "m.busy", "self.round.plan[3]"])
    assert mutations("self.version = 3\nself.round = Round(1, 0.0)\n"
                     "member.mark_ready(now)\nx = member.ready\n") == []
