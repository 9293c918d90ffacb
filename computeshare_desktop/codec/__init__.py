"""Codec registry: every CodecId has exactly one codec (checked at import)."""

from __future__ import annotations

from ..errors import RemoteProtocolError
from ..protocol.codes import RejectCode
from .base import Codec, CodecId
from .feedback import Encoded, ErrorFeedback
from .half import Bf16Codec, Fp16Codec
from .int8 import Int8Codec
from .raw import RawCodec
from .topk import DEFAULT_FRACTION, TopKCodec, check_fraction
from .zstd import ZstdCodec

_CODECS: dict[CodecId, Codec] = {c.id: c for c in (
    RawCodec(), ZstdCodec(), Fp16Codec(), Bf16Codec(), Int8Codec(), TopKCodec())}

assert set(_CODECS) == set(CodecId), "every codec id needs a codec"

CODECS: tuple[str, ...] = tuple(c.value for c in CodecId)
LOSSLESS: tuple[str, ...] = tuple(c.value for c in CodecId if _CODECS[c].lossless)


def get_codec(name: str) -> Codec:
    """The codec called ``name`` (decoding needs no parameters); BAD_CODEC when unknown."""
    try:
        return _CODECS[CodecId(name)]
    except ValueError:
        raise RemoteProtocolError(RejectCode.BAD_CODEC, f"unknown codec {name!r}") from None


def make_codec(name: str, *, topk: float = DEFAULT_FRACTION) -> Codec:
    """An encoder for ``name`` with its parameters (the fraction a sparse codec keeps)."""
    return get_codec(name).configured(fraction=topk)


__all__ = ["CODECS", "LOSSLESS", "Codec", "CodecId", "DEFAULT_FRACTION", "Encoded",
           "ErrorFeedback", "check_fraction", "get_codec", "make_codec"]
