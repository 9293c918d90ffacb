"""The one exception hierarchy of ComputeShare.

``ComputeShareError`` is the base of every error the package raises on purpose. Its
subclasses say whose fault it is: ours (a bug or a misuse of an API), the peer's (bad input
from the network), or the user's environment (offline, port in use, missing files). The CLI
turns each of them into one clear line and an exit code.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """What the ``computeshare`` command's exit status means (``--help`` and the README's
    table are made from, or checked against, these)."""

    meaning: str  # one line for people

    def __new__(cls, value: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    OK = 0, "success"
    BUG = 1, "unexpected error (a bug: please report it with -vv output)"
    USAGE = 2, "bad arguments or settings"
    UNREACHABLE = 3, "hub unreachable (wrong address, hub not running, firewall)"
    PORT_IN_USE = 4, "port already in use"
    REFUSED = 5, "refused by the hub (wrong PIN, session full or finished, different model)"
    DATASET_OFFLINE = 6, "dataset not available offline"
    HUB_STOPPED = 7, ("the hub stopped the session before its end (join: it was not "
                      "resumed within --come-back, 10 min by default)")
    REMOVED = 8, ("the host removed this machine from the session (join: not that session "
                  "again, unless the host allows it again) or blocked it from its sessions")
    MODEL_REFUSED = 9, ("host: every worker that came refused the model, and no other came "
                        "within 60 s")
    FOLDER_IN_USE = 10, ("host: the output folder belongs to a session that is running "
                         "(the message names its process and port)")
    INTERRUPTED = 130, "interrupted (Ctrl-C)"


def exit_codes_text() -> str:
    """The exit codes as ``--help`` lists them."""
    return "exit codes:\n" + "\n".join(f"  {code.value:<2} {code.meaning}" for code in ExitCode)


class ComputeShareError(Exception):
    """Base class of every error ComputeShare raises on purpose."""

    exit_code = ExitCode.BUG


class ConfigError(ComputeShareError):
    """A setting or argument is invalid (unknown dataset or model, bad number...)."""

    exit_code = ExitCode.USAGE


class FolderInUseError(ConfigError):
    """The output folder is held by a session that is running (hub/folder_lock.py): a
    second one there would cut its metrics and overwrite its checkpoint."""

    exit_code = ExitCode.FOLDER_IN_USE

    def __init__(self, folder: Any, holder: Any) -> None:
        self.folder, self.holder = folder, holder  # holder: a folder_lock.Holder
        super().__init__(f"{folder} belongs to a session that is running ({holder.text()}):"
                         " stop it first, or choose another output folder")


class DatasetUnavailableError(ComputeShareError):
    """A dataset is neither cached nor downloadable; the message names the way out."""

    exit_code = ExitCode.DATASET_OFFLINE


class CodedError(ComputeShareError):
    """An error that carries a reject code (see protocol.codes) and a detail."""

    prefix = ""

    def __init__(self, code: Any, detail: str = "") -> None:
        self.code: Any = code  # a RejectCode (typed loosely: protocol imports this module)
        self.detail = detail
        name = getattr(code, "name", str(code))
        super().__init__(self.prefix + (f"{name}: {detail}" if detail else name))


class ProtocolError(CodedError):
    """Base of wire-protocol errors."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something we cannot accept (garbage, wrong sizes, bad values)."""


class LocalProtocolError(ProtocolError):
    """We were asked to send something the protocol does not allow (a bug on our side)."""


class HubUnreachableError(ComputeShareError):
    """The hub did not answer within the retry budget."""

    exit_code = ExitCode.UNREACHABLE


class PortInUseError(ComputeShareError):
    """The hub could not bind its port."""

    exit_code = ExitCode.PORT_IN_USE


class RejectedError(CodedError):
    """The hub refused us with a reject code (wrong PIN, session full, mismatch...)."""

    exit_code = ExitCode.REFUSED
    prefix = "hub refused: "


class RemovedError(RejectedError):
    """The host removed (kicked) this machine from the session, or blocked it from all of
    its sessions: it ended, nothing to retry (the reject code stays BANNED or BLOCKED; the
    message is the plain fact)."""

    exit_code = ExitCode.REMOVED

    def __init__(self, code: Any, detail: str = "") -> None:
        super().__init__(code, detail)
        self.blocked = getattr(code, "value", code) == "BLOCKED"
        self.args = ("the host blocked this machine from its sessions: it cannot join them "
                     "until the host allows it again" if self.blocked else
                     "the host removed this machine from this session: it can join the "
                     "host's next session with the PIN, or this one if the host allows it "
                     "again",)


class HubStoppedError(ComputeShareError):
    """The hub's user stopped the session before its end (it can be resumed)."""

    exit_code = ExitCode.HUB_STOPPED


class AllRefusedError(ComputeShareError):
    """Every worker that came refused the session's model and nobody else came in time: a
    host on the command line ends (the model and a checkpoint are saved, as on a stop)."""

    exit_code = ExitCode.MODEL_REFUSED
