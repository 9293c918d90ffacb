import sys

from .fast import main

sys.exit(main())
