"""Frozen entry point of ``computeshare`` (the command line)."""

import multiprocessing

multiprocessing.freeze_support()  # first: a frozen child process must stop here

import sys  # noqa: E402

from computeshare_desktop.cli.fast import main  # noqa: E402

sys.exit(main())
