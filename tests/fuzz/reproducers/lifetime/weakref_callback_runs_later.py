"""object lifetime: the trace keeps recorded values alive, so the weakref callback runs after main."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: mismatch: outcome untraced {'returned': 'True'} != traced {'returned': 'False'}; LOG untraced ['gone'] != traced []
#   3.13: mismatch: outcome untraced {'returned': 'True'} != traced {'returned': 'False'}; LOG untraced ['gone'] != traced []

import weakref
LOG = []

class Thing:
    pass

def main():
    thing = Thing()
    ref = weakref.ref(thing, lambda r: LOG.append("gone"))
    del thing
    return ref() is None

ARGS = ()
