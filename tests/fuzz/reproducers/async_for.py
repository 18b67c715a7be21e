"""issue 9 (async): the async generator driven by `async for` has offset -1."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode WeakSet.__init__.<locals>._remove in Runner.__init__
#   3.13: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode ticks in consume

import asyncio
LOG = []

async def ticks():
    yield 1

async def consume():
    async for v in ticks():
        return v

def main():
    return asyncio.run(consume())

ARGS = ()
