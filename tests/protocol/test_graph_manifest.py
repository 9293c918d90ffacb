"""A graph's manifest and state on the wire: exact round trips, and every manifest that does
not hold together refused with a reject code (never another exception)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.graphs import (MAX_MANIFEST_BYTES, Manifest, decode_manifest,
                                                  encode_manifest, entry, program_sha256,
                                                  state_blob, state_tensors, stats_frame,
                                                  stats_from_frame)

TENSORS = {"stem.1.running_mean": torch.tensor([0.5, -1.0]),
           "stem.1.running_var": torch.tensor([1.0, 2.0]),
           "stem.1.num_batches_tracked": torch.tensor(7),
           "backbone.0.weight": torch.randn(3, 2, 1, 1, dtype=torch.float64),
           "mask": torch.tensor([True, False]), "half": torch.randn(4).to(torch.bfloat16)}


def manifest(**changes: Any) -> Manifest:
    state = [entry(n, t) for n, t in TENSORS.items()]
    good = Manifest(model="net.py:Net", trainable=["head.weight", "head.bias"],
                    aliases={"tied.weight": "backbone.0.weight"}, state=state,
                    stats=["stem.1.running_mean", "stem.1.running_var"], program_bytes=12,
                    program_sha256=program_sha256(b"{}"), state_bytes=sum(e.nbytes for e in state),
                    op_count=44, fingerprint="f" * 16)
    return msgspec.structs.replace(good, **changes)


def refused(data: bytes) -> RejectCode:
    with pytest.raises(RemoteProtocolError) as info:
        decode_manifest(data)
    return info.value.code


def test_the_manifest_and_the_state_round_trip_exactly() -> None:
    m = manifest()
    assert decode_manifest(encode_manifest(m)) == m
    back = state_tensors(state_blob(m.state, TENSORS), m)
    assert list(back) == list(TENSORS)
    for name, tensor in TENSORS.items():
        assert back[name].dtype == tensor.dtype and torch.equal(back[name], tensor), name
    assert m.stats_numel() == 4
    stats = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert torch.equal(stats_from_frame(stats_frame(stats), 4), stats)
    assert stats_frame(None) == b"" and stats_from_frame(b"", 0) is None


@pytest.mark.parametrize("changes", [
    {"stats": ["stem.1.num_batches_tracked"]},  # an int64 buffer is no running statistic
    {"stats": ["not.in.state"]},
    {"stats": ["stem.1.running_mean", "stem.1.running_mean"]},
    {"trainable": ["head.weight", "head.weight"]},
    {"trainable": ["stem.1.running_mean"]},  # trainable and state at once
    {"state_bytes": 1},
])
def test_a_manifest_that_does_not_hold_together_is_malformed(changes: dict[str, Any]) -> None:
    assert refused(encode_manifest(manifest(**changes))) is RejectCode.MALFORMED


@pytest.mark.parametrize("edit", [
    lambda d: {**d, "extra": 1},
    lambda d: {k: v for k, v in d.items() if k != "stats"},
    lambda d: {**d, "trainable": ["head.weight; import os"]},  # not a tensor's name
    lambda d: {**d, "trainable": ["x" * 201]},
    lambda d: {**d, "program_sha256": "F" * 64},
    lambda d: {**d, "program_bytes": 0},
    lambda d: {**d, "state": [{"name": "a", "dtype": "object", "shape": [1]}]},
    lambda d: {**d, "state": [{"name": "a", "dtype": "float32", "shape": [1] * 9}]},
    lambda d: {**d, "state": [{"name": "a", "dtype": "float32", "shape": [-1]}]},
    lambda d: {**d, "op_count": "44"},
])
def test_a_manifest_off_its_schema_is_malformed(edit: Any) -> None:
    data = msgspec.json.encode(edit(msgspec.to_builtins(manifest())))
    assert refused(data) is RejectCode.MALFORMED


def test_a_manifest_over_its_cap_is_too_large() -> None:
    assert refused(b" " * (MAX_MANIFEST_BYTES + 1)) is RejectCode.TOO_LARGE


def test_state_of_another_size_is_bad_shape() -> None:
    m = manifest()
    blob = state_blob(m.state, TENSORS)
    for bad in (blob[:-1], blob + b"\0"):
        with pytest.raises(RemoteProtocolError) as info:
            state_tensors(bad, m)
        assert info.value.code is RejectCode.BAD_SHAPE
    with pytest.raises(RemoteProtocolError):
        stats_from_frame(b"\0" * 4, 0)  # statistics for a model that has none
    with pytest.raises(RemoteProtocolError):
        stats_from_frame(b"\0" * 12, 4)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_any_bytes_decode_or_are_refused(data: bytes) -> None:
    try:
        decode_manifest(data)
    except RemoteProtocolError as exc:
        assert exc.code in (RejectCode.MALFORMED, RejectCode.TOO_LARGE)
