"""The IRTracker README's examples in Python: f, geom (stochastic recursion), h (a loop)."""

import math
import random

import tracer


def f(x):
    return math.sin(x) + x


def geom(n, beta, rng):
    return n if rng.random() < beta else geom(n + 1, beta, rng)


def h(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


if __name__ == "__main__":
    tracer.printlevels(tracer.track(f, 1.0), 2)
    print()
    tracer.printlevels(tracer.track(geom, 1, 0.5, random.Random(2)), 3)
    print()
    tracer.printlevels(tracer.track(geom, 1, 0.5, random.Random(2), ctx=tracer.context.DepthLimitContext(2)), 3)
    print()
    tracer.printlevels(tracer.track(h, 2.0, 2), 2)
