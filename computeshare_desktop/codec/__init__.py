"""Codec registry: every CodecId has exactly one codec (checked at import)."""

from __future__ import annotations

from ..errors import RemoteProtocolError
from ..protocol.codes import RejectCode
from .base import Codec, CodecId
from .raw import RawCodec
from .zstd import ZstdCodec

_CODECS: dict[CodecId, Codec] = {c.id: c for c in (RawCodec(), ZstdCodec())}

assert set(_CODECS) == set(CodecId), "every codec id needs a codec"

CODECS: tuple[str, ...] = tuple(c.value for c in CodecId)


def get_codec(name: str) -> Codec:
    """The codec called ``name``; RemoteProtocolError(BAD_CODEC) when there is none."""
    try:
        return _CODECS[CodecId(name)]
    except ValueError:
        raise RemoteProtocolError(RejectCode.BAD_CODEC, f"unknown codec {name!r}") from None


__all__ = ["CODECS", "Codec", "CodecId", "get_codec"]
