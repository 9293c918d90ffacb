"""The installers' icon writers: .ico and .icns read back entry by entry, renders from the SVG."""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ICONS_PY = ROOT / "packaging" / "icons.py"
SVG = ROOT / "resources" / "icons" / "computeshare.svg"


def _load_icons():
    # packaging/ is not a package (it would shadow PyPA's `packaging`): load by path.
    spec = importlib.util.spec_from_file_location("computeshare_packaging_icons", ICONS_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


icons = _load_icons()


def tiny_png(size: int) -> bytes:
    """A valid opaque grey square PNG of ``size`` pixels, made without any image library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * size for _ in range(size))
    return (icons.PNG_MAGIC + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def read_ico(data: bytes) -> dict[int, bytes]:
    """{size: PNG} from a .ico file, checking its header and directory."""
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1) and count > 0
    out = {}
    for i in range(count):
        w, h, colours, res, planes, bpp, length, offset = struct.unpack(
            "<BBBBHHII", data[6 + 16 * i:22 + 16 * i])
        assert (colours, res, planes, bpp) == (0, 0, 1, 32)
        assert w == h and offset + length <= len(data)
        png = data[offset:offset + length]
        assert icons.png_size(png) == (w or 256, h or 256)
        out[w or 256] = png
    return out


def read_icns(data: bytes) -> dict[bytes, bytes]:
    """{type: PNG} from an .icns file, checking the container and each entry's length."""
    assert data[:4] == b"icns" and struct.unpack(">I", data[4:8])[0] == len(data)
    out, pos = {}, 8
    while pos < len(data):
        kind, length = data[pos:pos + 4], struct.unpack(">I", data[pos + 4:pos + 8])[0]
        assert length > 8 and pos + length <= len(data)
        out[kind] = data[pos + 8:pos + length]
        pos += length
    assert pos == len(data)
    return out


def test_ico_holds_one_png_entry_per_size():
    images = {size: tiny_png(size) for size in icons.ICO_SIZES}
    entries = read_ico(icons.ico_bytes(images))
    assert entries == images


def test_icns_holds_ic07_to_ic10():
    images = {size: tiny_png(size) for size in icons.ICNS_TYPES}
    entries = read_icns(icons.icns_bytes(images))
    assert list(entries) == [b"ic07", b"ic08", b"ic09", b"ic10"]
    assert [icons.png_size(png) for png in entries.values()] == [(s, s) for s in
                                                                 (128, 256, 512, 1024)]


def test_writers_refuse_wrong_or_missing_sizes():
    with pytest.raises(ValueError, match="no image"):
        icons.ico_bytes({16: tiny_png(16)})
    with pytest.raises(ValueError, match="32 px image"):
        icons.ico_bytes({16: tiny_png(16), 32: tiny_png(30)}, sizes=(16, 32))
    with pytest.raises(ValueError, match="at most 256"):
        icons.ico_bytes({512: tiny_png(512)}, sizes=(512,))
    with pytest.raises(ValueError, match="no PNG icns type"):
        icons.icns_bytes({64: tiny_png(64)}, sizes=(64,))
    with pytest.raises(ValueError, match="not a PNG"):
        icons.png_size(b"GIF89a" + bytes(30))


def test_every_size_renders_from_the_svg(tmp_path: Path):
    pytest.importorskip("PySide6.QtSvg")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, str(ICONS_PY), "--svg", str(SVG), "--out",
                           str(tmp_path), "--png", "256", "--png", "48", "--ico", "--icns"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert icons.png_size((tmp_path / "computeshare-256.png").read_bytes()) == (256, 256)
    assert icons.png_size((tmp_path / "computeshare-48.png").read_bytes()) == (48, 48)
    ico = read_ico((tmp_path / "computeshare.ico").read_bytes())
    assert sorted(ico) == sorted(icons.ICO_SIZES)
    icns = read_icns((tmp_path / "computeshare.icns").read_bytes())
    assert sorted(icns) == sorted(icons.ICNS_TYPES.values())
    # The renders are the artwork, not empty canvases: many distinct bytes in the 1024 px one.
    assert len(icns[b"ic10"]) > 20_000
