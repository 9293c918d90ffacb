"""Application icons for the installers, every size rendered from the SVG master.

    python packaging/icons.py --out DIR [--png 256 ...] [--ico] [--icns]

``render_pngs`` draws the SVG with QtSvg (offscreen, no display needed); ``ico_bytes`` and
``icns_bytes`` pack PNG images into a Windows ``.ico`` and a macOS ``.icns`` container with
``struct`` alone, so no binary icon is ever edited by hand or checked in. The two writers
need no Qt (tests/packaging/test_icons.py reads their output back).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path
from typing import Mapping, Sequence

# Windows: PNG-compressed entries (Vista+); 256 is stored as 0 in the one-byte fields.
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# macOS: the PNG-typed entries of an icns file, by pixel size.
ICNS_TYPES = {128: b"ic07", 256: b"ic08", 512: b"ic09", 1024: b"ic10"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk.

    Raises:
        ValueError: ``data`` is not a PNG.
    """
    if data[:8] != PNG_MAGIC or data[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _checked(images: Mapping[int, bytes], sizes: Sequence[int]) -> list[tuple[int, bytes]]:
    """The images for ``sizes`` in order, each checked to be a square PNG of its size."""
    missing = [s for s in sizes if s not in images]
    if missing:
        raise ValueError(f"no image for sizes {missing}")
    for size in sizes:
        if png_size(images[size]) != (size, size):
            raise ValueError(f"the {size} px image is {png_size(images[size])}")
    return [(size, images[size]) for size in sizes]


def ico_bytes(images: Mapping[int, bytes], sizes: Sequence[int] = ICO_SIZES) -> bytes:
    """A ``.ico`` file holding one PNG entry per size (at most 256)."""
    entries = _checked(images, sizes)
    header = struct.pack("<HHH", 0, 1, len(entries))  # reserved, type 1 = icon, count
    offset = len(header) + 16 * len(entries)
    directory, blobs = b"", b""
    for size, data in entries:
        if size > 256:
            raise ValueError("an .ico entry is at most 256 px")
        dim = 0 if size == 256 else size
        # width, height, colours, reserved, planes, bits per pixel, bytes, offset
        directory += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        blobs += data
        offset += len(data)
    return header + directory + blobs


def icns_bytes(images: Mapping[int, bytes], sizes: Sequence[int] = tuple(ICNS_TYPES)) -> bytes:
    """An ``.icns`` file holding PNG entries (ic07..ic10: 128..1024 px)."""
    body = b""
    for size, data in _checked(images, sizes):
        if size not in ICNS_TYPES:
            raise ValueError(f"no PNG icns type for {size} px")
        body += ICNS_TYPES[size] + struct.pack(">I", 8 + len(data)) + data
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def render_pngs(svg: Path, sizes: Sequence[int]) -> dict[int, bytes]:
    """PNG renders of ``svg`` at each size (QtSvg; sets QT_QPA_PLATFORM=offscreen unless
    a platform is chosen).

    Raises:
        ValueError: ``svg`` is not a valid SVG.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG")
    out = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        image.save(buffer, "PNG")
        buffer.close()
        out[size] = bytes(data.data())
    del app
    return out


def write_icons(svg: Path, out: Path, pngs: Sequence[int] = (), ico: bool = False,
                icns: bool = False) -> list[Path]:
    """Write ``computeshare-SIZE.png`` files, ``computeshare.ico``, ``computeshare.icns``
    into ``out``; returns the files written."""
    wanted = set(pngs) | (set(ICO_SIZES) if ico else set()) | (set(ICNS_TYPES) if icns else set())
    images = render_pngs(svg, sorted(wanted))
    out.mkdir(parents=True, exist_ok=True)
    files = {out / f"computeshare-{size}.png": images[size] for size in pngs}
    if ico:
        files[out / "computeshare.ico"] = ico_bytes(images)
    if icns:
        files[out / "computeshare.icns"] = icns_bytes(images)
    for path, data in files.items():
        path.write_bytes(data)
    return list(files)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the app icon for the installers.")
    parser.add_argument("--svg", type=Path, required=True, help="the SVG master")
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--png", type=int, action="append", default=[], metavar="SIZE",
                        help="write computeshare-SIZE.png (repeatable)")
    parser.add_argument("--ico", action="store_true", help="write computeshare.ico (Windows)")
    parser.add_argument("--icns", action="store_true", help="write computeshare.icns (macOS)")
    args = parser.parse_args(argv)
    for path in write_icons(args.svg, args.out, args.png, args.ico, args.icns):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
