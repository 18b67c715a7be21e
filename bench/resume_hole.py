"""Why a delegator's RESUME location cannot be switched off (issue 19, session 18).

Pure sys.monitoring, no tracer:  ``python bench/resume_hole.py``.  Two generators
of one code object delegate at the same ``yield from``: A to a generator, B
(whose delegation started first) to a list iterator.  A tool answers DISABLE at
the delegator's PY_RESUME (what writing it at the receiver's PY_RESUME would
need) and at its PY_YIELD (as session 15's delegation yields do).  B's later
resumes then fire no event at all: nothing sees B's activations."""
import sys


mon = sys.monitoring
TOOL = 3
E = mon.events


def relay(src):
    yield from src


def leaf():
    for i in range(3):
        yield i


events = []
RELAY = relay.__code__


def on_resume(code, offset):
    if code is RELAY and offset != 0:
        events.append(("resume", sys._getframe(1).f_locals["src"].__class__.__name__))
        return mon.DISABLE


def on_yield(code, offset, value):
    if code is RELAY:
        events.append(("yield", sys._getframe(1).f_locals["src"].__class__.__name__))
        return mon.DISABLE


b = relay(iter([10, 11, 12]))
next(b)                    # B's delegation starts before the location goes off
mon.use_tool_id(TOOL, "hole")
mon.register_callback(TOOL, E.PY_RESUME, on_resume)
mon.register_callback(TOOL, E.PY_YIELD, on_yield)
mon.set_local_events(TOOL, RELAY, E.PY_RESUME | E.PY_YIELD)
a = relay(leaf())
next(a)
next(a)                    # A's resume at the `yield from`: answered DISABLE
n = len(events)
print("events of A's resume:", events)
print("B resumed twice:", next(b), next(b))
print("events of B's two resumes and yields:", events[n:])
mon.set_local_events(TOOL, RELAY, 0)
mon.free_tool_id(TOOL)
