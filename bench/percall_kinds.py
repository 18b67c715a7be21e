"""A traced run's events by kind, and tracer's instructions by .pxi line.

Usage::

    python bench/percall_kinds.py kinds T.out CALLS
    python bench/percall_kinds.py lines T.out DIVISOR [TOP] [FILE.pxi]

T.out is a callgrind output of ``bench/percall.py NAME traced`` (two traced
runs: the warm-up and the measured one), CALLS the run's Python calls
(``bench/percall.py --counts``).

``kinds``: for each of CPython's event-delivering functions
(``_Py_call_instrumentation``: PY_START and PY_RESUME; ``_arg``: PY_RETURN and
PY_YIELD; ``_instruction``; ``_jump``: BRANCH and JUMP) and tracer's handlers
under them, how many times it ran per run and per call (from the output's
``calls=`` lines) and its inclusive instructions per run of it; the difference
of a CPython row and its handler's row is the dispatch of one event of that
kind (plus tracer's trampoline).  ``PyLong_FromLong``/``long_dealloc`` show the
event offsets CPython boxes as Python ints (offsets >= 256 are outside the
small-int cache), mixed with the program's own ints.

``lines``: tracer's own instructions summed by the .pxi line they were compiled
from (Cython's ``/* "src/tracer/_core/X.pxi":N`` comments in _core.c; gcc's
inlining does not move them), divided by DIVISOR (e.g. the events of the kind
under study over the two runs): where an inlined routine's instructions go,
which ``callgrind_annotate``'s function rows cannot show.  Call lines (``=>``,
inclusive counts of callees) are left out.  Needs ``callgrind_annotate`` and
the _core.c the .so was built from (src/tracer/_core.c).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "src", "tracer"))

KINDS = [
    ("PY_START/PY_RESUME: CPython", "_Py_call_instrumentation"),
    ("  handler _py_resume", "__pyx_f_6tracer_5_core__py_resume"),
    ("PY_RETURN/PY_YIELD: CPython", "_Py_call_instrumentation_arg"),
    ("  handler _py_yield (with the delegators' yields it writes)", "__pyx_f_6tracer_5_core__py_yield"),
    ("  handler _py_return", "__pyx_f_6tracer_5_core__py_return"),
    ("INSTRUCTION: CPython", "_Py_call_instrumentation_instruction"),
    ("  handler _instruction", "__pyx_f_6tracer_5_core__instruction"),
    ("BRANCH/JUMP: CPython", "_Py_call_instrumentation_jump"),
    ("  handler _branch", "__pyx_f_6tracer_5_core__branch"),
    ("  handler _jump", "__pyx_f_6tracer_5_core__jump"),
    ("ints boxed (PyLong_FromLong)", "PyLong_FromLong"),
    ("ints freed (long_dealloc)", "long_dealloc"),
]


def _calls(path: str) -> collections.Counter:
    # calls=N lines follow the cfn= line of the function called.
    names: dict[str, str] = {}
    counts: collections.Counter = collections.Counter()
    callee = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.strip())
            if m:
                kind, ident, name = m.groups()
                if name:
                    names[ident] = name
                if kind == "cfn":
                    callee = ident
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m and callee is not None:
                counts[callee] += int(m.group(1))
    by_name: collections.Counter = collections.Counter()
    for ident, n in counts.items():
        by_name[names.get(ident, ident)] += n
    return by_name


def _inclusive(path: str) -> dict[str, int]:
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    incl: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+\S+?:(\S+)", line)
        if m:
            n = int(m.group(1).replace(",", ""))
            incl[m.group(2)] = max(incl.get(m.group(2), 0), n)
    return incl


def kinds(path: str, calls: int) -> None:
    ran, incl = _calls(path), _inclusive(path)
    print("| function | runs per traced run | per call | inclusive per run of it |")
    print("|---|---|---|---|")
    for label, fn in KINDS:
        n = ran.get(fn, 0)
        if n == 0:
            continue
        print(f"| {label} | {n / 2:,.0f} | {n / 2 / calls:.3f} | {incl.get(fn, 0) / n:,.0f} |")


def lines(path: str, divisor: float, top: int, only: str | None) -> None:
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path,
                          os.path.join(SRC, "_core.c")],
                         capture_output=True, text=True, check=True).stdout
    marker = re.compile(r'/\* "src/tracer/_core/(\w+\.pxi)":(\d+)')
    row = re.compile(r"^\s*([\d,]+|\.)\s+(?:\([^)]*\)\s+)?(.*)$")
    where = None
    total: collections.Counter = collections.Counter()
    for line in out.splitlines():
        if "events annotated" in line or "PROGRAM TOTALS" in line:
            continue
        m = row.match(line)
        if not m:
            continue
        count, code = m.groups()
        if code.lstrip().startswith("=>"):
            continue
        mk = marker.search(code)
        if mk:
            where = (mk.group(1), int(mk.group(2)))
        if count != "." and where is not None:
            total[where] += int(count.replace(",", ""))
    sources: dict[str, list[str]] = {}
    items = sorted(((k, v) for k, v in total.items() if only is None or k[0] == only),
                   key=lambda kv: -kv[1])
    for (name, n), v in items[:top]:
        if name not in sources:
            with open(os.path.join(SRC, "_core", name)) as f:
                sources[name] = f.read().splitlines()
        text = sources[name][n - 1].strip()[:80] if n <= len(sources[name]) else ""
        print(f"{v / divisor:8.1f}  {name}:{n}  {text}")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "kinds":
        kinds(sys.argv[2], int(sys.argv[3].replace(",", "")))
    elif len(sys.argv) >= 4 and sys.argv[1] == "lines":
        lines(sys.argv[2], float(sys.argv[3].replace(",", "")),
              int(sys.argv[4]) if len(sys.argv) > 4 else 60,
              sys.argv[5] if len(sys.argv) > 5 else None)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
