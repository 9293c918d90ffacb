"""The app's style sheet and icons, loaded from the package data (``gui/assets/``).

The sources live in the top-level ``ui/`` and ``resources/`` folders; ``python
resources/build_assets.py`` mirrors them here so that an editable install, a regular
install (wheel) and a frozen bundle all find them the same way, through importlib.resources.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from PySide6.QtCore import QSize
from PySide6.QtGui import QIcon, QPixmap

log = logging.getLogger(__name__)

STYLE_SHEET = "computeshare.qss"
ICON_SIZES = (16, 32, 64, 256)


def asset_bytes(name: str) -> bytes:
    """The content of one packaged asset.

    Raises:
        FileNotFoundError: the asset is not in the package (run resources/build_assets.py).
    """
    return (resources.files(__package__) / "assets" / name).read_bytes()


def style_sheet() -> str:
    """The Qt style sheet, with ``@assets/`` pointing at the packaged images.

    Empty (Qt's default look) if it is missing.
    """
    try:
        text = asset_bytes(STYLE_SHEET).decode("utf-8")
    except (FileNotFoundError, OSError) as exc:
        log.warning("style sheet not found (%s): using the default look", exc)
        return ""
    folder = resources.files(__package__) / "assets"
    if isinstance(folder, Path):  # a zipped install has no file path: arrows fall back
        text = text.replace("@assets/", folder.as_posix() + "/")
    return text


def app_icon() -> QIcon:
    """The application icon, with a pixmap per size so every platform gets a sharp one."""
    icon = QIcon()
    for size in ICON_SIZES:
        try:
            data = asset_bytes(f"computeshare-{size}.png")
        except (FileNotFoundError, OSError):
            continue
        pixmap = QPixmap()
        if pixmap.loadFromData(data, "PNG"):
            icon.addPixmap(pixmap)
    if icon.isNull():
        log.warning("application icon not found in the package")
    return icon


def icon_size_available(icon: QIcon, size: int) -> bool:
    """True when ``icon`` has a pixmap of exactly ``size`` pixels (tests, packaging)."""
    return any(s == QSize(size, size) for s in icon.availableSizes())
