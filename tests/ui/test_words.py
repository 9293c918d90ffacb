"""The app's one table of words (gui/words.py): every state and code that can reach a window
has a sentence, and none reads as its raw value. Qt-free."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from computeshare_desktop.events import LeaveReason
from computeshare_desktop.gui import words
from computeshare_desktop.gui.progress_rows import ACTIVE_STATES, LIVE_STATES
from computeshare_desktop.gui.words import RowState
from computeshare_desktop.protocol import RejectCode

PACKAGE = Path(words.__file__).resolve().parents[1]
RAW = re.compile(r"\b[A-Z]{2,}_[A-Z_]+\b|\b[a-z]+_[a-z_]+\b")  # BANNED_X, model_refused


def _is_sentence_text(text: str) -> bool:
    return bool(text) and text[:1].isupper() and not RAW.search(text)


@pytest.mark.parametrize("state", list(RowState))
def test_every_row_state_has_a_human_text(state: RowState) -> None:
    text = words.row_state(state.value)
    assert state in words.ROW_STATES and _is_sentence_text(text), (state, text)


@pytest.mark.parametrize("code", list(RejectCode))
def test_every_reject_code_has_a_sentence_for_each_side(code: RejectCode) -> None:
    text = words.refusal(code.value)
    assert code.value in words.REFUSALS and _is_sentence_text(text) and text.endswith(".")
    assert code.value not in text  # "(BANNED)" never reaches a window
    assert code.value in words.HUB_REFUSALS and not RAW.search(words.HUB_REFUSALS[code.value])


def test_failure_codes_beside_reject_codes_have_sentences() -> None:
    for code in ("UNREACHABLE", "ERROR"):
        assert _is_sentence_text(words.refusal(code)) and code not in words.refusal(code)
        assert _is_sentence_text(words.ending(code))


def _leave_reasons_the_hub_core_gives() -> set[str]:
    """Every reason of a ``WorkerLeft(..., LeaveReason.NAME)`` in the hub's code (a plain
    string there counts too)."""
    reasons: set[str] = set()
    for path in (PACKAGE / "hub").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "WorkerLeft":
                for arg in node.args[1:]:
                    reasons |= {LeaveReason[c.attr].value for c in ast.walk(arg)
                                if isinstance(c, ast.Attribute)
                                and getattr(c.value, "id", "") == "LeaveReason"}
                    reasons |= {c.value for c in ast.walk(arg)
                                if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return reasons


def test_every_reason_the_hub_gives_for_a_leave_is_a_row_state_with_words() -> None:
    reasons = _leave_reasons_the_hub_core_gives()
    assert {"kicked", "model_refused", "silent", "left", "paused"} <= reasons
    assert reasons == {reason.value for reason in LeaveReason}  # each one given somewhere
    for reason in reasons:
        assert RowState(reason) in words.LEAVINGS, reason
        assert not RAW.search(words.leaving(reason))


def test_the_rows_own_states_are_row_states() -> None:
    assert {RowState(s) for s in (*ACTIVE_STATES, *LIVE_STATES)}


def test_an_unknown_value_reads_as_a_plain_fallback_not_as_itself() -> None:
    assert words.row_state("warming_up") == "Warming up"
    assert words.refusal("NEW_CODE") == "The hub refused this machine."
    assert words.leaving("whatever") == "left the session"


def test_a_known_code_reads_its_sentence_and_an_unknown_one_its_detail() -> None:
    assert words.refusal("BANNED", "this machine was removed from the session by its host") \
        == ("The host removed this machine from this session. It can join the host's next "
            "session with the PIN, or this one if the host allows it again.")
    assert words.refusal("BLOCKED", "the host blocked this machine from its sessions") == \
        ("The host blocked this machine: it cannot join the host's sessions until the host "
         "allows it again.")
    assert words.refusal("NEW_CODE", "the moon is full.") == \
        "The hub refused this machine: the moon is full."


def test_the_refusal_summary_is_a_sentence_without_codes_or_tags() -> None:
    line = words.refusals_line({"BANNED": 1, "BAD_PIN": 2}, peer="00257130")
    assert line == ("Refused 3 requests: 2 with a wrong PIN, 1 from a machine the host "
                    "removed. The last came from the machine whose key starts 00257130.")
    assert words.log_sentence("[hub v21] shard 2 freed") == "Shard 2 freed"


def test_no_window_text_of_the_gui_names_a_command_line_flag() -> None:
    """The app names its controls, not flags. Every string literal the gui's
    modules could show (docstrings and comments aside) is read by AST; a flag may appear
    only beside the words saying the app has no control for it."""
    flag = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
    found = []
    for path in sorted((PACKAGE / "gui").glob("*.py")):
        if path.name == "app.py":  # the app's own command line (argparse)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr)}
        docs |= {id(c) for n in ast.walk(tree)  # the patterns words.for_app rewrites
                 if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "compile"
                 for c in ast.walk(n)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docs and flag.search(node.value) \
                    and "no setting for this" not in node.value:
                found.append(f"{path.name}:{node.lineno}: {node.value[:60]}")
    assert not found, found
