"""Frozen entry point of ``computeshare-desktop`` (the desktop app)."""

import multiprocessing

multiprocessing.freeze_support()  # first: a frozen child process must stop here

import sys  # noqa: E402

from computeshare_desktop.gui.app import main  # noqa: E402

sys.exit(main())
