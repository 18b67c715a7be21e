"""issue 9 item 1: an awaited coroutine's call node has offset -1."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode work in drive
#   3.13: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode work in drive

import asyncio
LOG = []

async def work():
    return 1

async def drive():
    return await work()

def main():
    return asyncio.run(drive())

ARGS = ()
