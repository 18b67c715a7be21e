"""issue 9 item 1: a weakref callback the interpreter runs inside traced code has offset -1."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels: KeyError: -1 [in location, nodes.py:147] at NestedCallNode <lambda> in main
#   3.13: trace-broken: printlevels: KeyError: -1 [in location, nodes.py:147] at NestedCallNode <lambda> in main

import weakref
LOG = []

class Thing:
    pass

THING = Thing()  # made at import, untraced
REF = weakref.ref(THING, lambda ref: LOG.append("gone"))

def main():
    global THING
    THING = None  # the Thing dies here; the interpreter calls the lambda
    return len(LOG)

ARGS = ()
