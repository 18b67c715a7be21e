"""A logging profiler as a tracking context (Cassette's classic overdubbing example).

`TimingContext` stamps every nested (Python) call node with the
`time.perf_counter_ns()` at which its body was entered and left, as
`node.metadata["start"]` / `["end"]`:

- `enter` runs when a call is about to be recorded inside: it reads the clock and
  gives the call's body a child context that remembers that start time;
- the child's `trackedreturn` runs at the body's return and stamps the call node
  (the ReturnNode's parent) with the start and the end;
- the caller's `trackednested` runs once the call has finished and fills in what
  is missing: a call that raised has no ReturnNode, so its end is stamped there.
  A C function that ran Python code (`sum` over a generator, `sorted` with a
  Python key) is recorded as a nested call too, but no `enter` announces it: its
  start is taken as its first nested child's start and it is marked
  `metadata["approximate"]` (shown as ≈ in the report).

The times include the tracer's own work, so they show where the traced program
spends its calls, not how fast it runs untraced.  `timing_report(root)` renders
the nested calls as an indented tree with their elapsed time and share of the
caller's.

Run:  python examples/profiler.py
"""

from __future__ import annotations

import time

import tracer


class TimingContext(tracer.Context):
    """Records the start and end time (perf_counter_ns) of every nested call."""

    def __init__(self, start: int | None = None):
        super().__init__()
        self.start = start
        self._entered = None   # (callee, start) of the call most recently entered from here

    def enter(self, f, /, *args, **kwargs):
        start = time.perf_counter_ns()
        self._entered = (f, start)
        return TimingContext(start)

    def trackedreturn(self, node):
        md = node.parent.metadata
        md.setdefault("start", self.start)
        md["end"] = time.perf_counter_ns()   # a generator's last yield or return wins

    def trackednested(self, node):
        md = node.metadata
        if "end" not in md:                  # the call raised: no ReturnNode
            md["end"] = time.perf_counter_ns()
        if "start" not in md:
            entered, self._entered = self._entered, None
            if entered is not None and entered[0] is node.callee:
                md["start"] = entered[1]
            else:                            # no enter: a C call that ran Python code
                starts = [c.metadata["start"] for c in node.children
                          if c.kind == "nested" and "start" in c.metadata]
                md["start"] = min(starts, default=md["end"])
                md["approximate"] = True


def profile(f, /, *args, **kwargs):
    """Trace `f(*args, **kwargs)` with a TimingContext; return the root node.

    If `f` raises, the exception propagates; `tracer.last_trace()` then holds the
    trace, with the root stamped as far as possible.
    """
    ctx = TimingContext()
    try:
        return tracer.track(f, *args, ctx=ctx, **kwargs)
    finally:
        root = tracer.last_trace()
        if root is not None and ctx._entered is not None:   # f raised: no ReturnNode
            md = root.metadata
            md.setdefault("start", ctx._entered[1])
            md.setdefault("end", time.perf_counter_ns())


def _name(call) -> str:
    fn = call.callee
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _short(value, width: int = 12) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _calls(node, depth: int = 0):
    """(depth, nested call node) for `node` and every nested call below it, in order."""
    yield depth, node
    for child in node.children:
        if child.kind == "nested":
            yield from _calls(child, depth + 1)


def elapsed_ns(call) -> int | None:
    md = call.metadata
    if "start" not in md or "end" not in md:
        return None
    return md["end"] - md["start"]


def timing_report(root) -> str:
    """The nested calls under `root` as an indented tree (two spaces per level):
    name(arguments), elapsed microseconds, share of the caller's time, and ↯ for a
    call that raised."""
    lines = []
    parent_time: dict[int, int | None] = {}
    for depth, call in _calls(root):
        t = elapsed_ns(call)
        parent_time[call.row] = t
        args = ", ".join(_short(a.value) for a in call.arguments)
        head = f"{'  ' * depth}{_name(call)}({args})"
        if t is None:
            lines.append(f"{head}  (no timing)")
            continue
        share = ""
        caller = call.parent
        if caller is not None:
            pt = parent_time.get(caller.row)
            if pt:
                share = f"  {100.0 * t / pt:5.1f}% of caller"
        raised = "  ↯ " + type(call.value).__name__ if call.raised else ""
        approx = "≈" if call.metadata.get("approximate") else " "
        lines.append(f"{head:<40} {approx}{t / 1000:10.1f} µs{share}{raised}")
    return "\n".join(lines)


# -- a small program to profile --------------------------------------------------------


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def parse(text):
    return int(text)


def safe_parse(text):
    try:
        return parse(text)
    except ValueError:
        return 0


def workload(n):
    total = fib(n)
    for word in ("7", "eleven", "13"):
        k = safe_parse(word)
        if is_prime(k):
            total += k
    return total


def main() -> None:
    root = profile(workload, 4)
    tracer.validate(root)
    print(f"workload(4) = {root.value}\n")
    print(timing_report(root))


if __name__ == "__main__":
    main()
