"""issue 9 item 1: statements after `yield from` resumes are not recorded."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode inner in outer; complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 2
#   3.13: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode inner in outer; complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 2

LOG = []

def inner():
    yield 1
    return 2

def outer():
    r = yield from inner()
    LOG.append(r)
    yield r

def main():
    return list(outer())

ARGS = ()
