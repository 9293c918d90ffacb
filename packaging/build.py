"""Build the installers of one platform into ``dist/``.

    python packaging/build.py linux     # dist/ComputeShare-VERSION-linux-x86_64.tar.gz
    python packaging/build.py macos     # packaging/macos.py
    python packaging/build.py windows   # packaging/windows.py

Each platform's recipe is the module of that name beside this file, with one function,
``build(version: str, dist: Path, work: Path) -> list[Path]``: it writes into ``dist``,
keeps scratch files (build venv, PyInstaller work) under ``work`` and returns the
installers it made. PyInstaller does not cross-compile: each recipe first checks that it
runs on its own OS and architecture, and says where to build otherwise.
Run it with any Python 3.11; the recipe makes its own build environment under ``build/``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Sequence

import common

PLATFORMS = ("linux", "macos", "windows")


def recipe(platform: str):
    """The platform's recipe module.

    Raises:
        BuildError: its file is not there (yet).
    """
    if not (common.PACKAGING / f"{platform}.py").exists():
        raise common.BuildError(f"packaging/{platform}.py does not exist: no {platform} recipe")
    return importlib.import_module(platform)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the installers of one platform.",
                                     allow_abbrev=False)
    parser.add_argument("platform", choices=PLATFORMS)
    parser.add_argument("--dist", type=Path, default=common.ROOT / "dist",
                        help="where the installers go (default: dist/)")
    parser.add_argument("--work", type=Path, default=common.ROOT / "build",
                        help="scratch folder: build environments, PyInstaller work "
                             "(default: build/)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        version = common.project_version()
        artifacts = recipe(args.platform).build(version, args.dist.resolve(),
                                                args.work.resolve())
    except common.BuildError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 1
    for path in artifacts:
        print(f"{path} ({common.megabytes(path.stat().st_size)})")
    common.log(f"built {args.platform} {version} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
