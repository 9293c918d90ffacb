"""``python -m computeshare_desktop`` starts the desktop app (the CLI is ``computeshare``)."""

import sys

from computeshare_desktop.gui.app import main

if __name__ == "__main__":
    sys.exit(main())
