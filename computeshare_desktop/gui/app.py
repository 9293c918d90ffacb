"""The desktop app's entry point: ``computeshare-desktop``, ``python -m computeshare_desktop``.

Qt loads inside the functions that need it, so ``--self-test`` can still run (and report)
its other checks in a bundle whose Qt is broken.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import platformdirs

from .. import __version__
from ..discovery import DiscoveryError
from ..discovery.hub_advert import resolve_interface
from ..service.options import AppConfig

if TYPE_CHECKING:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from .main_window import MainWindow

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The app's few command-line options (the rest are Qt's own)."""
    parser = argparse.ArgumentParser(prog="computeshare-desktop",
                                     description="ComputeShare desktop app.")
    parser.add_argument("--interface", action="append", default=None, metavar="IF",
                        help="find and announce sessions on this interface or address only "
                             "(repeatable; default: all)")
    parser.add_argument("--bind", default="0.0.0.0",
                        help="address a hosted session listens on (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log to stderr (-v: info, -vv: debug)")
    parser.add_argument("--self-test", action="store_true",
                        help="check this install end to end without a window (Qt offscreen, "
                             "training on loopback, the saved model, mDNS); exit code 0 when "
                             "every check passed")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    args, _qt_args = parser.parse_known_args(argv)
    return args


def setup_logging(verbose: int) -> Path | None:
    """Warnings on stderr by default; the log panes show them too. A windowed bundle has no
    stderr (Windows, macOS from Finder): there the log goes to a file, whose path is
    returned."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    fmt = "%(asctime)s %(levelname).1s %(name)s: %(message)s"
    if sys.stderr is not None:
        logging.basicConfig(level=level, format=fmt)
        return None
    path = Path(platformdirs.user_log_dir("ComputeShare", appauthor=False)) / "desktop.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=level, format=fmt, filename=path, encoding="utf-8")
    return path


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


def _close_on_signals(window: MainWindow) -> QTimer:
    """Ctrl-C or SIGTERM close the window without a question: every session stops and saves
    its model, adverts are withdrawn.

    Python runs signal handlers only between bytecodes; the timer lets it in while Qt's
    event loop runs in C++.
    """
    from PySide6.QtCore import QTimer

    for name in ("SIGINT", "SIGTERM", "SIGBREAK"):  # SIGBREAK: Ctrl-Break on Windows
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), lambda *_: window.close_without_asking())
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(200)
    return wake


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


def main(argv: Sequence[str] | None = None) -> int:
    """Start the app (or its self-test); returns its exit code."""
    multiprocessing.freeze_support()  # first thing in a frozen (PyInstaller) bundle
    argv = list(sys.argv if argv is None else argv)
    args = parse_args(argv[1:])
    setup_logging(args.verbose)
    if args.self_test:
        from ..selftest import self_test

        return self_test()
    try:
        interfaces = tuple(resolve_interface(i) for i in args.interface) if args.interface \
            else None
    except DiscoveryError as exc:
        print(f"computeshare-desktop: {exc}", file=sys.stderr)
        return 2
    return run_window(argv, AppConfig(interfaces=interfaces, bind=args.bind))


def run_window(argv: Sequence[str], config: AppConfig) -> int:
    """Show the main window until it closes; returns the event loop's exit code."""
    from PySide6.QtCore import Qt

    from .main_window import MainWindow
    from .settings import Settings

    app = make_app(argv)
    app.setQuitOnLastWindowClosed(True)
    window = MainWindow(Settings(), config)
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
    window.show()
    wake = _close_on_signals(window)
    code = app.exec()
    wake.stop()
    log.info("ComputeShare desktop exiting (%d)", code)
    return code


if __name__ == "__main__":
    sys.exit(main())
