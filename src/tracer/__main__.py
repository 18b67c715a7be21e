"""`python -m tracer`: the command line (src/tracer/cli/main.py)."""

import sys

from .cli.main import main

sys.exit(main())
