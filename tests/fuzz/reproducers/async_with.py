"""issue 9 (async): __aenter__ awaited by `async with` has offset -1."""
# Outcome on today's main (scripts/fuzz --replay THIS_FILE):
#   3.12: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode Session.__aenter__ in run
#   3.13: trace-broken: printlevels_all: KeyError: -1 [in location, nodes.py:147] at NestedCallNode Session.__aenter__ in run

import asyncio
LOG = []

class Session:
    async def __aenter__(self):
        return self
    async def __aexit__(self, *exc):
        return False

async def run():
    async with Session():
        return 1

def main():
    return asyncio.run(run())

ARGS = ()
