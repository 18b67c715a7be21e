"""issue 9 item 1: a call the interpreter makes (__bool__ for `if x:`) has offset -1."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels: KeyError: -1 [in location, nodes.py:147] at NestedCallNode Box.__bool__ in main
#   3.13: trace-broken: printlevels: KeyError: -1 [in location, nodes.py:147] at NestedCallNode Box.__bool__ in main

LOG = []

class Box:
    def __bool__(self):
        return True

def main():
    if Box():
        return 1

ARGS = ()
