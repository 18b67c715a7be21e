"""Time by function, and a timeline, of a traced call (Context(timing=True)).

    python examples/timing.py [OUT.json]

Traces a small task scheduler (generator tasks, a deque) with per-call timing,
prints the time table of its summary (calls, total, self and per-call time by
function) and writes the calls as Chrome trace-event JSON (default
scheduler.trace.json) to open in ui.perfetto.dev or speedscope.
"""

import sys
from collections import deque

import tracer
from tracer.context import Context
from tracer.export import chrome


def worker(ident, steps, log):
    total = 0
    for step in range(steps):
        total += checksum(ident, step)
        if step % 5 == 0:
            log.append((ident, total))
        yield
    return total


def checksum(ident, step):
    return sum((ident * step + k) % 7 for k in range(8))


def scheduler(ntasks, steps):
    log: list[tuple[int, int]] = []
    results: dict[int, int] = {}
    ready = deque((i, worker(i, steps, log)) for i in range(ntasks))
    while ready:
        ident, task = ready.popleft()
        try:
            next(task)
        except StopIteration as done:
            results[ident] = done.value
        else:
            ready.append((ident, task))
    return [results[i] for i in range(ntasks)], len(log)


if __name__ == "__main__":
    root = tracer.track(scheduler, 20, 50, ctx=Context(timing=True))
    s = tracer.summary(root)
    text = str(s)
    print(text[text.index("time by function"):].split("\n\n")[0])
    out = sys.argv[1] if len(sys.argv) > 1 else "scheduler.trace.json"
    chrome.write(root, out)
    calls = sum(f.calls for f in s.times or [])
    print(f"\n{s.nodes:,} nodes, {calls:,} timed calls in {(s.seconds or 0) * 1e3:.1f} ms; "
          f"timeline in {out}")
