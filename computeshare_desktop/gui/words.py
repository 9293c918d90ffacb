"""The app's words: every state and code that reaches a window, as a person reads it. No Qt.

One table per vocabulary: a worker row's state (``RowState``: what the window sets and the
reasons the hub's ``WorkerLeft`` gives), the protocol's reject codes and a failure's other
codes (``REFUSALS``), the end of a session for this machine (``ENDINGS``). Widgets and log
panes show ``row_state(...)``, ``refusal(...)`` and ``ending(...)``, never the raw value; the
command line keeps the codes (``protocol.MEANINGS``, ``service.messages``). A value no table
knows reads as a plain fallback sentence, never as itself.
"""

from __future__ import annotations

import logging
import re
from enum import Enum
from typing import Mapping

from ..hub.rejects import REFUSALS_EXTRA
from ..protocol import RejectCode


class RowState(str, Enum):
    """Where a worker's row stands; the value is what ``WorkerRow.state`` holds."""

    JOINING = "joining"  # paired, asking for its shard
    LOADING = "loading data"  # receiving its shard
    READY = "ready"  # has its shard: the next round waits for it
    TRAINING = "training"  # pushing updates
    DONE = "done"  # trained to the end
    PAUSED = "paused"  # its person (or its battery) paused it; it may come back
    LEFT = "left"  # said goodbye
    SILENT = "silent"  # stopped answering: the hub freed its shard
    KICKED = "kicked"  # the host removed it (the hub's view)
    REMOVED = "removed"  # the host removed this machine (its own window's view)
    ARCH_MISMATCH = "arch_mismatch"  # builds another architecture than the hub's
    STUCK = "stuck"  # missed several rounds: its shard went to others
    MODEL_REFUSED = "model_refused"  # refused the model (or was refused it)
    STOPPED = "stopped"  # the session stopped while it was in it
    NOT_FOLLOWED = "not followed"  # this window no longer hears of it


ROW_STATES: dict[RowState, str] = {
    RowState.JOINING: "Joining",
    RowState.LOADING: "Loading data",
    RowState.READY: "Ready",
    RowState.TRAINING: "Training",
    RowState.DONE: "Done",
    RowState.PAUSED: "Paused",
    RowState.LEFT: "Left",
    RowState.SILENT: "Not answering",
    RowState.KICKED: "Removed by the host",
    RowState.REMOVED: "Removed by the host",
    RowState.ARCH_MISMATCH: "Builds another model",
    RowState.STUCK: "Too slow: shard freed",
    RowState.MODEL_REFUSED: "Refused the model",
    RowState.STOPPED: "Stopped",
    RowState.NOT_FOLLOWED: "No longer followed",
}

# What the log says of a worker that leaves for this reason: "Worker 2 (laptop) …".
LEAVINGS: dict[RowState, str] = {
    RowState.LEFT: "left the session",
    RowState.PAUSED: "paused",
    RowState.SILENT: "stopped answering: its share of the data went to the others",
    RowState.KICKED: "was removed from the session by the host",
    RowState.ARCH_MISMATCH: "builds a different model than this hub's",
    RowState.STUCK: "missed several rounds: its share of the data went to the others",
    RowState.MODEL_REFUSED: "refused the model",
}

# A refusal as the person on the refused machine reads it.
_REJECTS: dict[RejectCode, str] = {
    RejectCode.MALFORMED: "A message could not be read: the other side may run a different "
                          "ComputeShare.",
    RejectCode.VERSION_MISMATCH: "The hub runs another version of ComputeShare: update both "
                                 "machines to the same version.",
    RejectCode.BAD_PIN: "Wrong PIN: check the PIN shown on the hub and try again.",
    RejectCode.LOCKED_OUT: "Too many wrong PINs: the hub has paused pairing for a while. "
                           "Wait, then try again.",
    RejectCode.UNKNOWN_CHALLENGE: "The pairing took too long and expired: try again.",
    RejectCode.NOT_PAIRED: "This machine is not paired with the hub (or no longer): join "
                           "again with the PIN.",
    RejectCode.BUSY: "The hub is busy pairing other machines: it tries again shortly.",
    RejectCode.UNKNOWN_WORKER: "The hub no longer knows this machine (it may have restarted): "
                               "joining again.",
    RejectCode.SESSION_FULL: "The session already has all the machines it expects.",
    RejectCode.SESSION_DONE: "This session has already finished.",
    RejectCode.ARCH_MISMATCH: "This machine builds a different model than the hub: update "
                              "ComputeShare.",
    RejectCode.STALE: "An update arrived after the model had moved on, so it was skipped.",
    RejectCode.BAD_VERSION: "An update named a model version the hub never sent.",
    RejectCode.DUPLICATE: "An update arrived twice; the second was skipped.",
    RejectCode.BAD_SHAPE: "An update did not fit the model's sizes.",
    RejectCode.NOT_FINITE: "An update held invalid numbers (not finite) and was skipped.",
    RejectCode.TOO_LARGE: "A message was larger than allowed.",
    RejectCode.BAD_CODEC: "A message's compressed contents could not be decoded.",
    RejectCode.BAD_RANGE: "A request asked for data outside the session's data.",
    RejectCode.BAD_INDEX: "A compressed update was damaged (its positions are out of order).",
    RejectCode.NOT_TRAINING: "The hub is not training right now.",
    RejectCode.HUB_STOPPED: "The host stopped the session.",
    RejectCode.BANNED: "The host removed this machine from this session. It can join the "
                       "host's next session with the PIN, or this one if the host allows it "
                       "again.",
    RejectCode.BLOCKED: "The host blocked this machine: it cannot join the host's sessions "
                        "until the host allows it again.",
    RejectCode.TORCH_MISMATCH: "The hub sends its model as a graph, which needs the same "
                               "PyTorch release on this machine as on the hub.",
}
REFUSALS: dict[str, str] = {code.value: text for code, text in _REJECTS.items()} | {
    "UNREACHABLE": "The hub could not be reached: check the address and that it is running.",
    "ERROR": "Something went wrong on this machine.",
}

# A refusal as the host reads it, in its summary: "Refused 3 requests: 2 from …".
_HUB_REJECTS: dict[RejectCode, str] = {
    RejectCode.MALFORMED: "that could not be read",
    RejectCode.VERSION_MISMATCH: "from a machine with another version of ComputeShare",
    RejectCode.BAD_PIN: "with a wrong PIN",
    RejectCode.LOCKED_OUT: "while pairing was paused after wrong PINs",
    RejectCode.UNKNOWN_CHALLENGE: "from a pairing that had expired",
    RejectCode.NOT_PAIRED: "from a machine that is not paired",
    RejectCode.BUSY: "while the hub was busy pairing others",
    RejectCode.UNKNOWN_WORKER: "from a machine that is no longer in the session",
    RejectCode.SESSION_FULL: "to join when the session was full",
    RejectCode.SESSION_DONE: "after the session had finished",
    RejectCode.ARCH_MISMATCH: "from a machine that builds another model",
    RejectCode.STALE: "with an update made on an old model",
    RejectCode.BAD_VERSION: "with an update for a model version never sent",
    RejectCode.DUPLICATE: "with an update sent twice",
    RejectCode.BAD_SHAPE: "with an update that does not fit the model",
    RejectCode.NOT_FINITE: "with an update holding invalid numbers",
    RejectCode.TOO_LARGE: "larger than allowed",
    RejectCode.BAD_CODEC: "whose contents could not be decoded",
    RejectCode.BAD_RANGE: "for data outside the session's data",
    RejectCode.BAD_INDEX: "with a damaged compressed update",
    RejectCode.NOT_TRAINING: "while the hub was not training",
    RejectCode.HUB_STOPPED: "after the session had stopped",
    RejectCode.BANNED: "from a machine the host removed",
    RejectCode.BLOCKED: "from a machine the host blocked",
    RejectCode.TORCH_MISMATCH: "from a machine with another PyTorch release",
}
HUB_REFUSALS: dict[str, str] = {code.value: text for code, text in _HUB_REJECTS.items()}

# How a session ended for this machine (a worker's window): its end banner and status.
ENDINGS: dict[str, str] = {
    "finished": "The session finished.",
    "left": "You left the session.",
    "stopped": "The host stopped the session.",
    "removed": "The host removed this machine from the session.",
    "blocked": "The host blocked this machine from its sessions.",
    "lost": "The hub stopped answering.",
    "failed": "The session ended with an error.",
}
# ... and for each reject code that ends it, which of those it is
ENDS_BY_CODE = {RejectCode.BANNED.value: "removed", RejectCode.BLOCKED.value: "blocked",
                RejectCode.HUB_STOPPED.value: "stopped",
                RejectCode.SESSION_DONE.value: "finished", "UNREACHABLE": "lost"}


def row_state(state: str) -> str:
    """A row's state for its cell: "model_refused" reads "Refused the model"."""
    try:
        return ROW_STATES[RowState(state)]
    except ValueError:
        return state[:1].upper() + state[1:].replace("_", " ")


def leaving(reason: str) -> str:
    """What a worker did that left for ``reason`` (a WorkerLeft reason), for the log."""
    try:
        return LEAVINGS.get(RowState(reason), "left the session")
    except ValueError:
        return "left the session"


def refusal(code: str, detail: str = "") -> str:
    """A reject (or failure) code as one or two sentences, the code itself not named;
    for a code no table knows, ``detail`` (the hub's own words) says why."""
    if code in REFUSALS:
        return REFUSALS[code]
    why = detail.strip().rstrip(".")
    return f"The hub refused this machine: {why}." if why else "The hub refused this machine."


def failure(code: str, message: str) -> str:
    """What a window says of a ``Failed`` event: a refusal's sentence for a reject code (the
    service's message ends "(BANNED)"), the message itself for UNREACHABLE and ERROR, whose
    text says what happened."""
    return message if code in ("ERROR", "UNREACHABLE") else refusal(code)


def ending(code: str) -> str:
    """How a session ended for a worker that failed with ``code``."""
    return ENDINGS[ENDS_BY_CODE.get(code, "failed")]


def refusals_line(counts: Mapping[str, int], peer: str = "") -> str:
    """The hub's summary of the requests it refused, as a sentence for its log pane:
    "Refused 3 requests: 2 from a machine the host removed, 1 with a wrong PIN."."""
    total = sum(counts.values())
    parts = [f"{n} {HUB_REFUSALS.get(code, 'for another reason')}"
             for code, n in sorted(counts.items())]
    where = f" The last came from the machine whose key starts {peer}." if peer else ""
    return (f"Refused {total} request{'s' if total != 1 else ''}: "
            f"{', '.join(parts)}.{where}")


_CONTEXT = re.compile(r"^\[(?:hub|worker)[^\]]*\]\s*")  # "[hub v21] ": for files, not people


def log_sentence(line: str) -> str:
    """A core's log line as the window shows it: no "[hub v21]" tag, a capital first."""
    text = _CONTEXT.sub("", line).strip()
    return text[:1].upper() + text[1:]


def record_sentence(record: logging.LogRecord) -> str:
    """A core's log record as the window shows it: the hub's summary of refused requests
    (hub/rejects.py, its counts carried with the record) in words, with no codes; any other
    line as ``log_sentence`` says it."""
    refused = getattr(record, REFUSALS_EXTRA, None)
    if refused is not None:
        counts, peer = refused
        return refusals_line(counts, peer)
    return log_sentence(record.getMessage())


# The doctor's fixes name the command line's flags (its report is the CLI's too); in the app
# each names the control that does it, or says plainly that the app has none.
HOST_PORT = "the Port field of Host a session… (step 3 · Who)"
_FLAGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"a hub here would need --port with three free ports"),
     "a session hosted here takes three free ports by itself, or set them with " + HOST_PORT),
    (re.compile(r"choose others with --port"), "choose others with " + HOST_PORT),
    (re.compile(r"(?:use|with) --interface (\S+) \(the Settings of the app too\)"),
     r"start the app with --interface \1 (the app has no setting for this)"),
    (re.compile(r"pick the LAN with --interface\b"),
     "start the app with --interface and the LAN's interface (the app has no setting for "
     "this)"),
)


def for_app(text: str) -> str:
    """A report meant for the command line, in the app's words: each flag the app has a
    control for names that control; one it has none for says so."""
    for pattern, words in _FLAGS:
        text = pattern.sub(words, text)
    return text



# What a hub says a host can do about a model its workers refused names the command line's
# flags (hub/user_model.py's way out and hub/code_offer.HINT: its log is the CLI's too); in
# the app's windows each names the control that does it, or says plainly that there is none.
def _offer_code_box() -> str:
    from ..hub.config import HubConfig
    from ..schema import spec
    return f"“{spec(HubConfig, 'offer_code').label}”"


_WAYS_OUT: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"as a last resort, --offer-code offers workers the file itself"),
     f"as a last resort, host it again with {_offer_code_box()} ticked in Host a session… "
     "(step 2 · How): workers then get the file itself"),
    (re.compile(r"or join it with --device cpu"),
     "or have it train on its CPU (the app picks the device itself: the command line's "
     "join can choose the CPU)"),
    (re.compile(r"; or join --trust-code [0-9a-fA-F]+\)"), ")"),
)


def refusal_for_app(text: str) -> str:
    """Why a worker refused the model, and the way out, in the app's words (no flag)."""
    for pattern, words in _WAYS_OUT:
        text = pattern.sub(words, text)
    return text
