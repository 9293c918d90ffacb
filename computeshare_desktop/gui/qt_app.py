"""The app's QApplication, and the self-test's check that Qt works in this install.

Both ``gui.app`` (the entry point, which runs the self-test) and the self-test's Qt step
import this module, and it imports neither: so no two modules import each other. Qt loads
inside the functions, so a broken Qt fails the self-test's Qt step, not its other steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .. import __version__

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication


def make_app(argv: Sequence[str]) -> QApplication:
    """The QApplication with the app's name, icon, style sheet and plot defaults."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from .assets import app_icon, style_sheet

    app = QApplication.instance() or QApplication(list(argv))
    assert isinstance(app, QApplication)
    app.setApplicationName("ComputeShare")
    app.setApplicationDisplayName("ComputeShare")
    app.setOrganizationName("ComputeShare")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(app_icon())
    app.setStyle("Fusion")  # the same look on every platform, which the style sheet extends
    app.setStyleSheet(style_sheet())
    pg.setConfigOptions(antialias=True, background="w", foreground="#475467")
    return app


def qt_self_check() -> str:
    """The self-test's Qt step: the app's QApplication (made or reused) runs on the offscreen
    platform, its style sheet and icon load, and a small styled widget renders with text.

    Returns a short summary; raises RuntimeError on a failed check.
    """
    from PySide6.QtCore import qVersion
    from PySide6.QtGui import QFontDatabase, QGuiApplication
    from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

    from .assets import app_icon, style_sheet

    make_app(["computeshare-desktop"])
    platform = QGuiApplication.platformName()
    if platform != "offscreen":
        raise RuntimeError(f"Qt runs on the {platform!r} platform, not 'offscreen'")
    if not style_sheet():
        raise RuntimeError("the style sheet is missing from the package")
    if app_icon().isNull():
        raise RuntimeError("the application icon is missing from the package")
    families = QFontDatabase.families()
    if not families:
        raise RuntimeError("Qt found no fonts")
    widget = QWidget()
    try:
        layout = QVBoxLayout(widget)
        layout.addWidget(QLabel("ComputeShare self-test"))
        layout.addWidget(QPushButton("Start"))
        widget.resize(240, 96)
        image = widget.grab().toImage()
    finally:
        widget.deleteLater()
    if image.isNull() or image.width() < 100:
        raise RuntimeError("rendering a widget gave no image")
    colours = {image.pixel(x, y) for x in range(0, image.width(), 2)
               for y in range(0, image.height(), 2)}
    if len(colours) < 3:  # a background alone, or a box: no text was drawn
        raise RuntimeError("a rendered widget shows no text (fonts did not load)")
    return f"Qt {qVersion()}, {len(families)} font families, a widget rendered"
