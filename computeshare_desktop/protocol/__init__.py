"""The hub/worker wire protocol: pure message definitions and frame encoding."""

from .codes import MEANINGS, RejectCode
from .messages import MESSAGE_CLASSES, TO_HUB, TO_PAIRING, MsgType, SessionState
from .wire import PROTOCOL_VERSION, decode, encode

__all__ = ["MEANINGS", "MESSAGE_CLASSES", "PROTOCOL_VERSION", "TO_HUB", "TO_PAIRING", "MsgType",
           "RejectCode", "SessionState", "decode", "encode"]
