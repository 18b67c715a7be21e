"""A call that raised after asyncio.run: its trace, kept for tracer.last_trace(), held an
asyncio future's iterator until the interpreter's last collection (fuzz seed 867000324,
reduced by scripts/fuzz --reduce)."""
# Outcome on the main of 2026-11-28 (257096d; scripts/fuzz --replay THIS_FILE):
#   3.12 (3.12.1): crash: killed by signal SIGSEGV in interpreter finalization, in CPython's
#     FutureIter_dealloc (PyType_GetModuleByDef on a type the collection had cleared:
#     gh-115874, fixed in 3.12.4); tracer.api now releases that trace at exit.
#   3.13: ok

import asyncio

LOG = []


class FuzzError(Exception):
    """Raised on purpose by generated code."""


async def ticks1(n, k):
    """An async generator over a bounded loop."""
    for i in range(n % 5):
        LOG.append(f"at1: {7}")
        await asyncio.sleep(0)
    yield k


async def consume1(a, b):
    total = 0
    async for value in ticks1(a, a):
        total += value
    values = [v * 2 async for v in ticks1(1, a) if v % 3]
    LOG.append(values)
    stream = ticks1(b, 1)
    LOG.append(await anext(stream, -1))
    await stream.aclose()
    return total


def part1_async_gen(a, b):
    return asyncio.run(consume1(a, -3))


def part2_raise_escape(a, b):
    if (max([v for v in range((-1) % 6)], default=b)) == a:
        raise FuzzError(f"escaped with {a} and {b}")
    return a


def main(a, b):
    results = []
    results.append(part1_async_gen(a, b))
    results.append(part2_raise_escape(a, b))
    return results


ARGS = (4, 10)
