"""The app's QApplication, and the self-test's check that Qt works in this install.

Both ``gui.app`` (the entry point, which runs the self-test) and the self-test's Qt step
import this module, and it imports neither: so no two modules import each other. Qt loads
inside the functions, so a broken Qt fails the self-test's Qt step, not its other steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .. import __version__

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication, QWidget

ENTER_KEYS = "computeshare-enter-keys"  # the object name of the one Enter filter of an app


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
    _enter_presses_buttons(app)
    return app


def takes_enter_as_space(widget: QWidget) -> bool:
    """Whether Enter on ``widget``, focused, should do what Space does: a button, check box,
    radio button or checkable group box, except a push button whose Enter Qt already
    handles (a dialog's default and auto-default buttons click themselves) or gives to its
    dialog's default button on purpose (autoDefault set off: the folder dialog's Close)."""
    from PySide6.QtWidgets import QAbstractButton, QDialog, QGroupBox, QPushButton

    if isinstance(widget, QPushButton):
        return not (widget.autoDefault() or widget.isDefault()
                    or isinstance(widget.window(), QDialog))
    return isinstance(widget, QAbstractButton) or \
        isinstance(widget, QGroupBox) and widget.isCheckable()


def _enter_presses_buttons(app: QApplication) -> None:
    """Enter and Return press the focused button the way Space does, in every window: Qt
    drops them on a main window's button, and gives them from a dialog's check box to the
    dialog's default button. Installed once per QApplication, however often ``make_app``
    runs.

    The filter follows the focus, sitting on the focused button alone: the app's other
    events (paints, timers, plots, typing) never pass through Python for it.
    """
    from PySide6.QtCore import QEvent, QObject, Qt
    from PySide6.QtGui import QKeyEvent
    from PySide6.QtWidgets import QWidget

    if app.findChild(QObject, ENTER_KEYS) is not None:
        return
    plain = (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)

    class EnterKeys(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's
            """Enter or Return, pressed or released: Space's press or release instead."""
            if event.type() not in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) or \
                    not isinstance(event, QKeyEvent) or \
                    event.key() not in (Qt.Key.Key_Return, Qt.Key.Key_Enter) or \
                    event.modifiers() not in plain or not isinstance(watched, QWidget) or \
                    not watched.hasFocus() or not takes_enter_as_space(watched):
                return False
            space = QKeyEvent(event.type(), Qt.Key.Key_Space, Qt.KeyboardModifier.NoModifier,
                              " ", event.isAutoRepeat(), event.count())
            app.sendEvent(watched, space)
            return True

        def follow(self, old: QWidget | None, new: QWidget | None) -> None:
            if old is not None:
                old.removeEventFilter(self)
            if new is not None and takes_enter_as_space(new):
                new.installEventFilter(self)

    keys = EnterKeys(app)
    keys.setObjectName(ENTER_KEYS)
    app.focusChanged.connect(keys.follow)
    if (focused := app.focusWidget()) is not None:
        keys.follow(None, focused)


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
