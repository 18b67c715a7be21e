"""issue 9 item 1: statements after an `await` resumes are not recorded."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode sleep in work; complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 'resumed'
#   3.13: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode sleep in work; complete: IncompleteTrace: LOG.append recorded 0 times, the traced run appended 1, first entry not recorded: 'resumed'

import asyncio
LOG = []

async def work():
    await asyncio.sleep(0)
    LOG.append("resumed")

def main():
    asyncio.run(work())

ARGS = ()
