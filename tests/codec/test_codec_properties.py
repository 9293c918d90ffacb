"""Codecs carry their own properties, so nothing outside ``codec/`` asks which codec it has.

The hub's presets weigh the bytes on the wire, the trainer and the worker treat a sparse
codec's momentum differently, the Host dialog enables the top-k fraction: each reads a
property of the codec (``wire_fraction``, ``sparse``, ``needs_error_feedback``), never its
name or its class.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import computeshare_desktop
from computeshare_desktop.codec import CODECS, LOSSLESS, get_codec, make_codec
from computeshare_desktop.hub.presets import Mode, wire_fraction

ROOT = Path(computeshare_desktop.__file__).parent

# Bytes on the wire per float32 byte, measured on real gradients (the presets' numbers).
MEASURED = {"raw": 1.0, "zstd": 0.87, "fp16": 0.5, "bf16": 0.5, "int8": 0.26}


def test_each_codec_knows_its_wire_fraction():
    for name, fraction in MEASURED.items():
        assert get_codec(name).wire_fraction == fraction
        assert wire_fraction(Mode(name, 0.01, 0)) == fraction
    for kept in (0.01, 0.05, 1.0):  # an (index, value) pair of 8 bytes per value kept
        assert make_codec("topk", topk=kept).wire_fraction == kept * 8 / 4
        assert wire_fraction(Mode("topk", kept, 8)) == kept * 8 / 4


def test_sparse_and_error_feedback_follow_the_codec():
    assert [name for name in CODECS if get_codec(name).sparse] == ["topk"]
    for name in CODECS:
        codec = get_codec(name)
        assert codec.needs_error_feedback == (name not in LOSSLESS)


@pytest.mark.parametrize("name", CODECS)
def test_configured_sets_the_fraction_of_a_sparse_codec_only(name):
    codec = get_codec(name)
    configured = codec.configured(fraction=0.1)
    assert (configured is codec) == (not codec.sparse)
    assert make_codec(name, topk=0.1).wire_fraction == configured.wire_fraction


def test_indices_are_the_positions_a_sparse_payload_sends():
    values = torch.tensor([0.0, 5.0, -1.0, 0.5, -7.0, 0.1])
    topk = make_codec("topk", topk=0.3)  # 2 of 6
    assert topk.indices(topk.encode(values)).tolist() == [1, 4]
    with pytest.raises(NotImplementedError):
        get_codec("int8").indices(get_codec("int8").encode(values))


# ----------------------------------------------------------------- nobody else asks
def _codec_checks(tree: ast.Module) -> list[str]:
    """Comparisons with a codec's name, isinstance checks on a codec class, CodecId members
    and imports of a codec's own module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                names = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                if any(isinstance(n, ast.Constant) and n.value in CODECS for n in names):
                    found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("isinstance", "issubclass") and "Codec" in ast.unparse(
                    node.args[1] if len(node.args) > 1 else node):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "CodecId":
            found.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.lstrip(".").startswith(("codec.", "computeshare_desktop.codec.")) \
                and node.module.rsplit(".", 1)[-1] not in ("delta", "feedback", "base"):
            found.append(f"from {node.module} import ...")
    return found


def test_no_module_outside_codec_asks_for_a_codec_by_name_or_class():
    offenders = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("codec/"):
            continue
        found = _codec_checks(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offenders[rel] = found
    assert offenders == {}


def test_the_check_catches_what_the_package_did_before():
    old = ('sparse = mode.codec == "topk"\n'
           'if velocity is not None and isinstance(codec, TopKCodec): pass\n'
           'if codec.id is CodecId.TOPK: pass\n'
           'from ..codec.topk import TopKCodec\n'
           'ok = self.codec in CODECS and get_codec(name).sparse\n')
    assert sorted(_codec_checks(ast.parse(old))) == sorted([
        "mode.codec == 'topk'", "isinstance(codec, TopKCodec)", "CodecId.TOPK",
        "from codec.topk import ..."])
