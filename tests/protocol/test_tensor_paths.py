"""Tensor paths: one rule for the manifest and the graph, taking every name models use
and refusing what could escape where a name goes (protocol/paths.py)."""

from __future__ import annotations

import msgspec
import pytest

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.graph import GraphRefused
from computeshare_desktop.graph import checks, schema
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.graphs import (Manifest, decode_manifest, encode_manifest,
                                                  program_sha256)
from computeshare_desktop.protocol.paths import TensorPath

ACCEPTED = ["0.weight", "layers.10.bias", "blocks.conv-in.weight", "Head.weight",
            "trunk_output.block1.block1-0.proj.0.weight", "embed.pos:0", "a+b.c@2",
            "schicht.gewicht_ä", "层.权重"]
REFUSED = ['head."weight', "head.weight'", "a\\b", "a/b", "a b", "a\n.b", "a\x00b",
           "head..weight", ".weight", "weight.", "", "x" * 201, "head.weight; import os",
           "ﬁlter.weight",  # NFKC reads it as "filter"
           "blocks.__class__", "layer.class.weight", "getattr(self, \"x\")"]


def manifest(trainable: list[str]) -> bytes:
    return encode_manifest(Manifest(model="m", trainable=trainable, aliases={}, state=[],
                                    stats=[], program_bytes=2,
                                    program_sha256=program_sha256(b"{}"), state_bytes=0,
                                    op_count=1, fingerprint="f" * 16))


class Spec(msgspec.Struct):
    name: schema.FQN


@pytest.mark.parametrize("path", ACCEPTED)
def test_names_models_use_pass_both_sides(path: str) -> None:
    assert decode_manifest(manifest([path])).trainable == [path]
    assert msgspec.json.decode(msgspec.json.encode({"name": path}), type=Spec).name == path
    checks._check_fqn(path)


@pytest.mark.parametrize("path", REFUSED)
def test_names_that_could_escape_are_refused_by_both_sides(path: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        decode_manifest(manifest([path]))
    assert info.value.code is RejectCode.MALFORMED
    try:
        msgspec.json.decode(msgspec.json.encode({"name": path}), type=Spec)
    except msgspec.ValidationError:
        return
    with pytest.raises(GraphRefused, match="is not allowed"):
        checks._check_fqn(path)


def test_the_graph_and_the_manifest_share_the_rule() -> None:
    assert schema.FQN is TensorPath
