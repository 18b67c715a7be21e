"""The command line, `python -m tracer` (run, call, show, diff); imports everything
else and nothing imports it."""
