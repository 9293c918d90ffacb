"""The one exception hierarchy of ComputeShare.

``ComputeShareError`` is the base of every error the package raises on purpose. Its
subclasses say whose fault it is: ours (a bug or a misuse of an API), the peer's (bad input
from the network), or the user's environment (offline, port in use, missing files). The CLI
turns each of them into one clear line and an exit code.
"""

from __future__ import annotations

from typing import Any


class ComputeShareError(Exception):
    """Base class of every error ComputeShare raises on purpose."""

    exit_code = 1


class ConfigError(ComputeShareError):
    """A setting or argument is invalid (unknown dataset or model, bad number...)."""

    exit_code = 2


class DatasetUnavailableError(ComputeShareError):
    """A dataset is neither cached nor downloadable; the message names the way out."""

    exit_code = 6


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

    exit_code = 3


class PortInUseError(ComputeShareError):
    """The hub could not bind its port."""

    exit_code = 4


class RejectedError(CodedError):
    """The hub refused us with a reject code (wrong PIN, session full, mismatch...)."""

    exit_code = 5
    prefix = "hub refused: "


class HubStoppedError(ComputeShareError):
    """The hub's user stopped the session before its end (it can be resumed)."""

    exit_code = 7
