"""Split a traced call's callgrind instructions by where they go.

Usage::

    valgrind --tool=callgrind --callgrind-out-file=T.out python bench/percall.py fib traced
    valgrind --tool=callgrind --callgrind-out-file=U.out python bench/percall.py fib untraced
    python bench/percall_split.py T.out U.out CALLS

CALLS is the number of Python calls in one traced run (``bench/percall.py
--counts``: 21,891 for fib at n = 20).  ``bench/percall.py NAME traced`` runs the
workload traced twice (a warm-up, then the measured run), so the handler
counts below are divided by 2 * CALLS; the total overhead (traced minus
untraced program totals) by CALLS.  Each row is a function's inclusive count
(``callgrind_annotate --inclusive=yes``) per call, and its own (exclusive) count
beside it: the rows nest (a handler's row includes the rows of what it calls).
Only functions whose counts scale with the traced calls are listed: CPython's
``_Py_GetBaseOpcode`` (as many instructions with the run untraced) and
refcounting (inlined everywhere, no function of its own) are not.  Needs
``callgrind_annotate`` (valgrind) on PATH.
"""

from __future__ import annotations

import re
import subprocess
import sys

# (label, regular expression matched against callgrind_annotate's function column)
ROWS = [
    ("PY_START: CPython dispatch + handler", r"instrumentation\.c:_Py_call_instrumentation$"),
    ("  handler (_py_start; _h_py_start before session 15)", r"_core\.c:__pyx_f_6tracer_5_core__(h_)?py_start$"),
    ("    frame checks + plain entry (_frame_entered, _enter_plain inlined)",
     r"_core\.c:__pyx_f_6tracer_5_core__frame_entered$"),
    ("    plain entry where not inlined (_enter_plain)", r"_core\.c:__pyx_f_6tracer_5_core__enter_plain$"),
    ("    frame record set-up, general path (_enter)", r"_core\.c:__pyx_f_6tracer_5_core__enter$"),
    ("      call's open op (_open)", r"_core\.c:__pyx_f_6tracer_5_core__open$"),
    ("      frame push (_push)", r"_core\.c:__pyx_f_6tracer_5_core__push$"),
    ("      plan lookup (co_extra)", r"codeobject\.c:PyUnstable_Code_GetExtra$"),
    ("      frame column (add_frame)", r"_core\.c:__pyx_f_6tracer_5_core_5Trace_add_frame$"),
    ("INSTRUCTION: CPython dispatch + handler", r"instrumentation\.c:_Py_call_instrumentation_instruction$"),
    ("  handler (_instruction; _h_instruction before session 15)",
     r"_core\.c:__pyx_f_6tracer_5_core__(h_)?instruction$"),
    ("    a returned call's row completed (_close_open_call)",
     r"_core\.c:__pyx_f_6tracer_5_core__close_open_call$"),
    ("PY_RETURN: CPython dispatch + handler", r"instrumentation\.c:_Py_call_instrumentation_arg$"),
    ("  handler (_py_return; _h_py_return before session 15)",
     r"_core\.c:__pyx_f_6tracer_5_core__(h_)?py_return$"),
    ("    frame left (_leave, _return_plain inlined)", r"_core\.c:__pyx_f_6tracer_5_core__leave$"),
    ("      plain return where not inlined (_return_plain)",
     r"_core\.c:__pyx_f_6tracer_5_core__return_plain$"),
    ("      branch not evented (_take_silent_branch)", r"_core\.c:__pyx_f_6tracer_5_core__take_silent_branch$"),
    ("      call closed (_close_call)", r"_core\.c:__pyx_f_6tracer_5_core__close_call(\.isra\.0)?$"),
    ("all handlers: CPython's event vector", r"instrumentation\.c:call_instrumentation_vector\.part\.0\.isra\.0$"),
    ("ops replayed (_run_to_end)", r"_core\.c:__pyx_f_6tracer_5_core__run_to_end$"),
    ("  primitive ops (_record_primitive)", r"_core\.c:__pyx_f_6tracer_5_core__record_primitive$"),
    ("  recorded ops (_record)", r"_core\.c:__pyx_f_6tracer_5_core__record$"),
    ("arena appends (Trace.add_row)", r"_core\.c:__pyx_f_6tracer_5_core_5Trace_add_row$"),
    ("thread check (tracer_thread_state)", r"_frame\.c:tracer_thread_state$"),
    ("trampoline, code events (_cb_code)", r"_core\.c:__pyx_f_6tracer_5_core__cb_code$"),
    ("trampoline, value events (_cb_value)", r"_core\.c:__pyx_f_6tracer_5_core__cb_value$"),
    ("trampoline, PY_START (_cb_py_start, session 16)", r"_core\.c:__pyx_f_6tracer_5_core__cb_py_start$"),
    ("trampoline, INSTRUCTION (_cb_instruction, session 16)",
     r"_core\.c:__pyx_f_6tracer_5_core__cb_instruction$"),
    ("trampoline, PY_RETURN (_cb_py_return, session 16)", r"_core\.c:__pyx_f_6tracer_5_core__cb_py_return$"),
]

# tracer's sys.monitoring callbacks (one per signature, and since session 16 one
# each for PY_START, INSTRUCTION and PY_RETURN: callbacks.pxi), and CPython's
# functions that deliver an event (each calls the callbacks of one event kind): the
# second's inclusive count minus the first's is CPython's own dispatch.
CALLBACKS = (r"_core\.c:__pyx_f_6tracer_5_core__cb_(code|dest|value|py_start|instruction|py_return)$",
             r"instrumentation\.c:_Py_call_instrumentation(_[a-z0-9]+)?$")

_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S.*?)(?:\s+\[[^\]]*\])?\s*$")


def _counts(path: str, inclusive: bool) -> dict[str, int]:
    out = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
         "--threshold=100", path],
        capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            # One function appears once per source file it was inlined from: the
            # row whose file is the function's own carries its whole count, so
            # keep the largest.
            name, n = m.group(2), int(m.group(1).replace(",", ""))
            counts[name] = max(counts.get(name, 0), n)
    return counts


def _total(path: str) -> int:
    out = subprocess.run(["callgrind_annotate", path], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS", out)
    if m is None:
        raise SystemExit(f"{path}: no PROGRAM TOTALS line in callgrind_annotate's output")
    return int(m.group(1).replace(",", ""))


def _find(counts: dict[str, int], pattern: str) -> int:
    rx = re.compile(pattern)
    return max((n for name, n in counts.items() if rx.search(name)), default=0)


def _sum_functions(counts: dict[str, int], pattern: str) -> int:
    # Each matching function once (its largest row, as in _counts), summed.
    rx = re.compile(pattern)
    best: dict[str, int] = {}
    for name, n in counts.items():
        if rx.search(name):
            fn = name.rsplit(":", 1)[-1]
            best[fn] = max(best.get(fn, 0), n)
    return sum(best.values())


def main() -> None:
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    traced, untraced, calls = sys.argv[1], sys.argv[2], int(sys.argv[3].replace(",", ""))
    incl, excl = _counts(traced, True), _counts(traced, False)
    runs = 2 * calls
    overhead = (_total(traced) - _total(untraced)) / calls
    # tracer's side of every event: its sys.monitoring callbacks, inclusive (the
    # handlers and all they call); the rest of the overhead is CPython's dispatch
    # of the events (and the instrumented instructions themselves).
    handlers = _sum_functions(incl, CALLBACKS[0]) / runs
    events = _sum_functions(incl, CALLBACKS[1]) / runs
    print(f"overhead: {overhead:,.0f} instructions per call (program totals: noisy, +-1,000)")
    print(f"events (CPython's _Py_call_instrumentation*, inclusive): {events:,.0f} per call = "
          f"tracer's callbacks {handlers:,.0f} + CPython's dispatch {events - handlers:,.0f}")
    print("| where | inclusive /call | own /call |")
    print("|---|---|---|")
    for label, pattern in ROWS:
        print(f"| {label} | {_find(incl, pattern) / runs:,.0f} | {_find(excl, pattern) / runs:,.0f} |")


if __name__ == "__main__":
    main()
