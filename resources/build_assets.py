"""Render the app icon and copy the desktop app's assets into the package.

    python resources/build_assets.py          # render PNGs, refresh the package copy
    python resources/build_assets.py --check  # exit 1 if the package copy is stale

The sources live where the project layout puts them: ``ui/`` (style sheet) and
``resources/icons/`` (the SVG master and its PNG renders). An installed app cannot see
those folders, so this script mirrors them into ``computeshare_desktop/gui/assets/``,
which ships as package data and is what the app loads (``importlib.resources``). Commit
both; ``tests/ui/test_assets.py`` fails when the mirror is stale.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ICONS = ROOT / "resources" / "icons"
MASTER = ICONS / "computeshare.svg"
MIRROR = ROOT / "computeshare_desktop" / "gui" / "assets"
SIZES = (16, 32, 64, 256)


def sources() -> list[Path]:
    """The files the package mirrors."""
    return (sorted(ROOT.glob("ui/*.qss")) + sorted(ICONS.glob("*.svg"))
            + [png(s) for s in SIZES])


def png(size: int) -> Path:
    """Where the render at ``size`` pixels lives."""
    return ICONS / f"computeshare-{size}.png"


def render() -> None:
    """Render the SVG master at every size with QtSvg (headless, offscreen): the same
    renderer the installers' icons use (packaging/icons.py)."""
    sys.path.insert(0, str(ROOT / "packaging"))
    from icons import render_pngs

    try:
        renders = render_pngs(MASTER, SIZES)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    for size, data in renders.items():
        png(size).write_bytes(data)
        print(f"rendered {png(size).relative_to(ROOT)}")


def stale() -> list[str]:
    """Mirror files that are missing or differ from their source."""
    return [str(src.relative_to(ROOT)) for src in sources()
            if not (MIRROR / src.name).exists()
            or not filecmp.cmp(src, MIRROR / src.name, shallow=False)]


def mirror() -> None:
    """Copy every source into the package."""
    MIRROR.mkdir(parents=True, exist_ok=True)
    for src in sources():
        shutil.copyfile(src, MIRROR / src.name)
        print(f"copied {src.relative_to(ROOT)} -> {(MIRROR / src.name).relative_to(ROOT)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the package copy")
    parser.add_argument("--no-render", action="store_true", help="copy without re-rendering")
    args = parser.parse_args()
    if args.check:
        out_of_date = stale()
        for name in out_of_date:
            print(f"stale in the package: {name}", file=sys.stderr)
        return 1 if out_of_date else 0
    if not args.no_render:
        render()
    mirror()
    return 0


if __name__ == "__main__":
    sys.exit(main())
