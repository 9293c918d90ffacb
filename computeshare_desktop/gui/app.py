"""The desktop app's entry point: ``computeshare-desktop``, ``python -m computeshare_desktop``.

Qt loads inside the functions that need it, so ``--self-test`` can still run (and report)
its other checks in a bundle whose Qt is broken.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import platformdirs

from .. import __version__
from ..discovery import DiscoveryError
from ..discovery.hub_advert import resolve_interface
from ..errors import ExitCode
from ..command_options import AppFlags, OutputOptions
from ..schema import add_arguments
from ..service.options import AppConfig
from .qt_app import make_app
from .qt_platform import check_xcb

if TYPE_CHECKING:
    from PySide6.QtCore import QTimer

    from .main_window import MainWindow

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The app's few command-line options (the rest are Qt's own)."""
    parser = argparse.ArgumentParser(prog="computeshare-desktop",
                                     description="ComputeShare desktop app.")
    add_arguments(parser, AppConfig, "app")  # --interface, --bind (see app_options)
    add_arguments(parser, OutputOptions, "app")  # -v
    add_arguments(parser, AppFlags, "app")  # --self-test
    parser.add_argument("--version", action="version",  # argparse's own, as -h
                        version=f"%(prog)s {__version__}")
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


def platform_ready() -> bool:
    """On Linux, check that Qt's xcb plugin loads before QApplication tries (it aborts the
    process when it cannot); print the packages to install when it does not. False: do not
    start Qt."""
    check = check_xcb()
    if check.message and sys.stderr is not None:
        print(f"computeshare-desktop: {check.message}", file=sys.stderr)
    elif check.message:  # a windowed start: the log file (setup_logging)
        log.error("%s", check.message)
    if check.use_wayland:
        os.environ["QT_QPA_PLATFORM"] = "wayland"
    return not check.fatal


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
        interfaces = tuple(resolve_interface(i) for i in args.interfaces) if args.interfaces \
            else None
    except DiscoveryError as exc:
        print(f"computeshare-desktop: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return run_window(argv, AppConfig(interfaces=interfaces, bind=args.bind))


def run_window(argv: Sequence[str], config: AppConfig) -> int:
    """Show the main window until it closes; returns the event loop's exit code."""
    from PySide6.QtCore import Qt

    from .main_window import MainWindow
    from .settings import Settings

    if not platform_ready():
        return ExitCode.USAGE
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
