"""A delegating generator traced: `yield from`, `send`, and the values a resumed
frame carries in.  `python examples/generators.py` prints the trace."""

import tracer


def inner():
    sent = yield 1
    return 10 + sent


def outer(x):
    r = yield from inner()
    yield r * x


def drive(x):
    g = outer(x)
    first = next(g)
    second = g.send(5)
    return first, second


if __name__ == "__main__":
    tracer.printlevels(tracer.track(drive, 3), 5)
