"""What a hub tells the LAN about its session: a dataclass and its mDNS TXT record. Pure.

The TXT record is small (well under 250 bytes for realistic values), versioned (``v``) and
public: it carries no PIN and no key, only the fingerprint of the hub's public key. Parsing
a peer's record either returns a ``SessionAdvert`` or raises ``AdvertError``, nothing else
(the h11 invariant), and refuses text a terminal or a widget could be fooled by (control
and bidi-override characters).
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from ..protocol import SessionState
from ..protocol.pake import key_fingerprint as _pake_fingerprint
from .errors import AdvertError

SERVICE_TYPE = "_computeshare._tcp.local."
TXT_VERSION = "1"  # MAJOR or MAJOR.MINOR: a new minor only adds keys, a new major breaks

MAX_LABEL_BYTES = 63  # one DNS label, and the longest session name we advertise
MAX_TEXT_BYTES = {b"n": 63, b"h": 63, b"m": 40, b"d": 40}
MAX_SESSION_ID_CHARS = 32
FINGERPRINT_CHARS = 16
MAX_COUNT = 999_999
MAX_ENTRY_BYTES = 255  # one TXT string: a one-byte length prefix
MAX_TXT_BYTES = 400  # the whole record, length prefixes included
MAX_ENTRIES = 32  # our 12 keys plus room for future minor versions

STATES = frozenset(state.value for state in SessionState)
_DIGITS = re.compile(rb"[0-9]{1,6}")
_VERSION = re.compile(rb"([0-9]{1,3})(?:\.[0-9]{1,3})?")
_JOINED = re.compile(rb"([0-9]{1,6})/([0-9]{1,6})")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@dataclass(frozen=True, slots=True)
class SessionAdvert:
    """One hub session as advertised on the LAN."""

    session_id: str  # short lowercase hex id, at most 32 characters
    name: str  # human session name, at most 63 bytes of UTF-8 once advertised
    host: str  # host name of the hub machine
    model: str
    dataset: str
    joined: int
    expected: int
    state: str  # a SessionState value
    protocol: int  # the hub's wire protocol version
    key_fingerprint: str  # fingerprint of the hub's public key, 16 hex characters
    port: int  # the hub's request port (the service port)
    pub_port: int  # event port
    pair_port: int  # pairing port
    round: int = 0  # rounds trained so far (TXT "r", optional: older hubs omit it)
    rounds: int = 0  # rounds the session will train (0: unknown)

    @property
    def full(self) -> bool:
        """True when every expected worker has joined."""
        return self.joined >= self.expected

    @property
    def done(self) -> bool:
        """True when training has finished."""
        return self.state == SessionState.DONE.value

    @property
    def accepting(self) -> bool:
        """True when a new worker may still join."""
        return not (self.full or self.done)


def new_session_id() -> str:
    """Return a fresh random session id (12 lowercase hex characters)."""
    return secrets.token_hex(6)


def key_fingerprint(public_key: bytes | str) -> str:
    """Return the 16-hex-character fingerprint of a public key, as advertised."""
    text = public_key.decode("ascii", "replace") if isinstance(public_key, bytes) else public_key
    return _pake_fingerprint(text)  # one definition, shared with the pairing check


def truncate_utf8(text: str, max_bytes: int) -> str:
    """Cut ``text`` to at most ``max_bytes`` of UTF-8 without splitting a character."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def clean_text(text: str, max_bytes: int) -> str:
    """Drop control and bidi characters and truncate to ``max_bytes``."""
    return truncate_utf8("".join(c for c in text if not _unsafe(c)), max_bytes)


def instance_label(advert: SessionAdvert) -> str:
    """The mDNS instance label: session name plus id, unique per hub, at most 63 bytes."""
    suffix = f" ({advert.session_id[:12]})"
    name = clean_text(advert.name, MAX_LABEL_BYTES).replace(".", "-").strip()
    return truncate_utf8(name, MAX_LABEL_BYTES - len(suffix)).rstrip() + suffix


def to_txt(advert: SessionAdvert) -> dict[bytes, bytes]:
    """Encode an advert as TXT properties; text fields are cleaned and truncated.

    Raises:
        ValueError: the advert has a value ``from_txt`` would refuse (a bug on our side).
    """
    fields = {
        b"v": TXT_VERSION, b"p": str(advert.protocol), b"id": advert.session_id,
        b"n": clean_text(advert.name, MAX_TEXT_BYTES[b"n"]),
        b"h": clean_text(advert.host, MAX_TEXT_BYTES[b"h"]),
        b"m": clean_text(advert.model, MAX_TEXT_BYTES[b"m"]),
        b"d": clean_text(advert.dataset, MAX_TEXT_BYTES[b"d"]),
        b"w": f"{advert.joined}/{advert.expected}", b"s": _state_value(advert.state),
        b"fp": advert.key_fingerprint, b"pub": str(advert.pub_port),
        b"pair": str(advert.pair_port), b"r": f"{advert.round}/{advert.rounds}",
    }
    txt = {key: value.encode("utf-8") for key, value in fields.items()}
    try:
        from_txt(txt, port=advert.port)
    except AdvertError as exc:
        raise ValueError(f"cannot advertise session {advert.session_id!r}: {exc}") from None
    return txt


def txt_size(txt: Mapping[bytes, bytes | None]) -> int:
    """Bytes the record takes on the wire (length prefixes included)."""
    return sum(1 + _entry_size(key, value) for key, value in txt.items())


def from_txt(txt: Mapping[bytes, bytes | None], *, port: int) -> SessionAdvert:
    """Decode a peer's TXT properties (and its SRV port) into an advert.

    Raises:
        AdvertError: a field is missing, malformed or oversized, the format version is
            not ours, or the port is out of range. Nothing else escapes.
    """
    _check_shape(txt)
    _check_version(txt)
    joined, expected = _joined(txt)
    return SessionAdvert(
        session_id=_hex(txt, b"id", 1, MAX_SESSION_ID_CHARS),
        name=_text(txt, b"n"), host=_text(txt, b"h"),
        model=_text(txt, b"m"), dataset=_text(txt, b"d"),
        joined=joined, expected=expected, state=_state(txt),
        protocol=_int(txt, b"p", 0, MAX_COUNT),
        key_fingerprint=_hex(txt, b"fp", FINGERPRINT_CHARS, FINGERPRINT_CHARS),
        port=_port(port), pub_port=_int(txt, b"pub", 1, 65535),
        pair_port=_int(txt, b"pair", 1, 65535), **_progress(txt),
    )


def _state_value(state: object) -> str:
    # str() of a str-mixin Enum member is "SessionState.WAITING", not its value.
    return str(state.value) if isinstance(state, SessionState) else str(state)


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) == "Cc" or char in _BIDI


def _entry_size(key: bytes, value: bytes | None) -> int:
    return len(key) + (0 if value is None else 1 + len(value))


def _check_shape(txt: object) -> None:
    if not isinstance(txt, Mapping):
        raise AdvertError("TXT record is not a key/value map")
    if len(txt) > MAX_ENTRIES:
        raise AdvertError(f"TXT record has {len(txt)} entries (at most {MAX_ENTRIES})")
    for key, value in txt.items():
        if type(key) is not bytes or not (value is None or type(value) is bytes):
            raise AdvertError("TXT keys and values must be bytes")
        if _entry_size(key, value) > MAX_ENTRY_BYTES:
            raise AdvertError(f"TXT entry {key[:16]!r} is over {MAX_ENTRY_BYTES} bytes")
    if txt_size(txt) > MAX_TXT_BYTES:
        raise AdvertError(f"TXT record is {txt_size(txt)} bytes (at most {MAX_TXT_BYTES})")


def _raw(txt: Mapping[bytes, bytes | None], key: bytes) -> bytes:
    value = txt.get(key)
    if value is None:
        raise AdvertError(f"TXT field {key.decode()!r} is missing")
    return value


def _check_version(txt: Mapping[bytes, bytes | None]) -> None:
    raw = _raw(txt, b"v")
    match = _VERSION.fullmatch(raw)
    if match is None:
        raise AdvertError(f"TXT field 'v' is not a version: {raw[:16]!r}")
    major, ours = int(match.group(1)), int(TXT_VERSION.split(".")[0])
    if major > ours:
        raise AdvertError(f"this session advertises format {raw.decode()}, newer than this "
                          f"ComputeShare understands ({TXT_VERSION}): update ComputeShare")
    if major < ours:
        raise AdvertError(f"this session advertises an old format {raw.decode()} "
                          f"(this ComputeShare speaks {TXT_VERSION}): update the hub")


def _text(txt: Mapping[bytes, bytes | None], key: bytes) -> str:
    raw, limit = _raw(txt, key), MAX_TEXT_BYTES[key]
    if not raw or len(raw) > limit:
        raise AdvertError(f"TXT field {key.decode()!r} must be 1 to {limit} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AdvertError(f"TXT field {key.decode()!r} is not UTF-8") from None
    if any(_unsafe(c) for c in text) or not text.strip():
        raise AdvertError(f"TXT field {key.decode()!r} has control characters or is blank")
    return text


def _int(txt: Mapping[bytes, bytes | None], key: bytes, low: int, high: int) -> int:
    raw = _raw(txt, key)
    if _DIGITS.fullmatch(raw) is None or not low <= int(raw) <= high:
        raise AdvertError(f"TXT field {key.decode()!r} must be an integer in "
                          f"{low}..{high}, got {raw[:16]!r}")
    return int(raw)


def _hex(txt: Mapping[bytes, bytes | None], key: bytes, shortest: int, longest: int) -> str:
    raw = _raw(txt, key)
    if not shortest <= len(raw) <= longest or re.fullmatch(rb"[0-9a-f]+", raw) is None:
        raise AdvertError(f"TXT field {key.decode()!r} must be {shortest}-{longest} "
                          f"lowercase hex characters, got {raw[:40]!r}")
    return raw.decode("ascii")


def _joined(txt: Mapping[bytes, bytes | None]) -> tuple[int, int]:
    raw = _raw(txt, b"w")
    match = _JOINED.fullmatch(raw)
    if match is None or int(match.group(2)) < 1:
        raise AdvertError(f"TXT field 'w' must be JOINED/EXPECTED with EXPECTED >= 1, "
                          f"got {raw[:16]!r}")
    return int(match.group(1)), int(match.group(2))


def _progress(txt: Mapping[bytes, bytes | None]) -> dict[str, int]:
    if b"r" not in txt:
        return {}
    raw = _raw(txt, b"r")
    match = _JOINED.fullmatch(raw)
    if match is None or int(match.group(1)) > int(match.group(2)) > 0:
        raise AdvertError(f"TXT field 'r' must be ROUND/ROUNDS, got {raw[:16]!r}")
    return {"round": int(match.group(1)), "rounds": int(match.group(2))}


def _state(txt: Mapping[bytes, bytes | None]) -> str:
    raw = _raw(txt, b"s")
    state = raw.decode("ascii", "replace")
    if state not in STATES:
        raise AdvertError(f"TXT field 's' is not a session state: {raw[:16]!r}")
    return state


def _port(port: object) -> int:
    if type(port) is not int or not 1 <= port <= 65535:
        raise AdvertError(f"service port must be in 1..65535, got {port!r}")
    return port
