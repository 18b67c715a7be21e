"""issue 9 item 1: the resumed delegate of `yield from` has offset -1."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode inner in outer
#   3.13: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode inner in outer

LOG = []

def inner():
    yield 1
    return 2

def outer():
    r = yield from inner()
    yield r

def main():
    return list(outer())

ARGS = ()
