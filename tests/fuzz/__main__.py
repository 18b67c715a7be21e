"""`python -m fuzz` (with tests/ on the path): see cli.py."""

import sys

from .cli import main

sys.exit(main())
