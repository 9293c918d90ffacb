"""The app's icon, style sheet and entry points."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui import assets  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_packaged_assets_match_their_sources():
    """ui/ and resources/ are the sources; the package carries a copy (build_assets.py)."""
    result = subprocess.run([sys.executable, str(ROOT / "resources" / "build_assets.py"),
                             "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"run python resources/build_assets.py\n{result.stderr}"


def test_icon_has_every_size_and_the_style_sheet_finds_its_images(styled_app):
    icon = assets.app_icon()
    assert all(assets.icon_size_available(icon, size) for size in assets.ICON_SIZES)
    assert not styled_app.windowIcon().isNull()
    sheet = assets.style_sheet()
    assert "QPushButton#Primary" in sheet and "@assets/" not in sheet
    for line in sheet.splitlines():
        if "url(" in line:
            path = line.split("url(", 1)[1].split(")", 1)[0]
            assert Path(path).is_file(), path


def test_entry_points():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    gui_scripts = pyproject.split("[project.gui-scripts]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^computeshare-desktop = "computeshare_desktop\.gui\.app:main"$',
                     gui_scripts, re.M)
    result = subprocess.run([sys.executable, "-m", "computeshare_desktop", "--version"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0 and "computeshare-desktop 0.1.0" in result.stdout
