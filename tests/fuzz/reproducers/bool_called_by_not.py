"""issue 9 item 1: `not x` calls __bool__ through TO_BOOL on 3.13 only."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: ok
#   3.13: trace-broken: printlevels: KeyError: -1 [in location, nodes.py:147] at NestedCallNode Box.__bool__ in main

LOG = []

class Box:
    def __bool__(self):
        return False

def main():
    return not Box()

ARGS = ()
