"""The desktop app's entry point: ``computeshare-desktop``, ``python -m computeshare_desktop``."""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import signal
import sys
from typing import Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from .. import __version__
from ..discovery import DiscoveryError
from ..discovery.hub_advert import resolve_interface
from .assets import app_icon, style_sheet
from .main_window import MainWindow
from ..service.options import AppConfig
from .settings import Settings

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
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    args, _qt_args = parser.parse_known_args(argv)
    return args


def setup_logging(verbose: int) -> None:
    """Warnings on stderr by default; the log panes show them too."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname).1s %(name)s: %(message)s")


def make_app(argv: Sequence[str]) -> QApplication:
    """The QApplication with the app's name, icon, style sheet and plot defaults."""
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
    """Ctrl-C or SIGTERM close the window (which stops sessions and withdraws adverts).

    Python runs signal handlers only between bytecodes; the timer lets it in while Qt's
    event loop runs in C++.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: window.close())
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(200)
    return wake


def main(argv: Sequence[str] | None = None) -> int:
    """Start the app; returns its exit code."""
    multiprocessing.freeze_support()  # first thing in a frozen (PyInstaller) bundle
    argv = list(sys.argv if argv is None else argv)
    args = parse_args(argv[1:])
    setup_logging(args.verbose)
    try:
        interfaces = tuple(resolve_interface(i) for i in args.interface) if args.interface \
            else None
    except DiscoveryError as exc:
        print(f"computeshare-desktop: {exc}", file=sys.stderr)
        return 2
    app = make_app(argv)
    app.setQuitOnLastWindowClosed(True)
    window = MainWindow(Settings(), AppConfig(interfaces=interfaces, bind=args.bind))
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
    window.show()
    wake = _close_on_signals(window)
    code = app.exec()
    wake.stop()
    log.info("ComputeShare desktop exiting (%d)", code)
    return code


if __name__ == "__main__":
    sys.exit(main())
