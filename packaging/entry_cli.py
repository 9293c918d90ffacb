"""Frozen entry point of ``computeshare`` (the command line)."""

import multiprocessing

multiprocessing.freeze_support()  # first: a frozen child process must stop here

import sys  # noqa: E402

# `computeshare demo` starts its workers as `sys.executable -m computeshare_desktop.cli join
# ...`; in the bundle sys.executable is this program, which takes the command directly.
if sys.argv[1:3] == ["-m", "computeshare_desktop.cli"]:
    del sys.argv[1:3]

from computeshare_desktop.cli.fast import main  # noqa: E402

sys.exit(main())
