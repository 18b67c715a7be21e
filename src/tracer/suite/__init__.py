"""Benchmarking and test suites: work counts of traced runs (`counts`), compared
across runs and versions (`compare_counts`), and a pytest plugin that traces each
test (`tracer.suite.pytest_plugin`, enabled with ``pytest --tracer``).

Above the views, persist and compare layers; only `tracer/__init__` and the command
line import it.
"""

from .compare import CountChange, CountsComparison, compare_counts
from .counts import BY, Counts, counts

__all__ = ["counts", "compare_counts", "Counts", "CountsComparison", "CountChange", "BY"]
