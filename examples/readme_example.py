"""The README's examples: f(x) = sin(x) + x and its graph; a call that branches and raises."""

import math

import tracer


def f(x):
    return math.sin(x) + x


root = tracer.track(f, 1.0)
tracer.printlevels(root, 2)
print("referenced(@4)      ", [n.index for n in root[4].referenced()])
print("referenced(@3, num) ", [(k, n.index) for k, n in root[3].referenced(numbered=True)])
print("backward(@4)        ", [n.index for n in root[4].backward()])
print("dependents(@1)      ", [n.index for n in root[1].dependents()])
print("forward(@1)         ", [n.index for n in root[1].forward()])
print("ir[@1.location]     ", root[1].ir[root[1].location])
print()
print(root[3].ir)
print()


def cents(price, sep=None):
    if sep is None:
        sep = "."
    whole, frac = price.split(sep)
    if not frac:
        raise ValueError(f"no cents in {price!r}")
    return int(whole) * 100 + int(frac)


try:
    tracer.track(cents, "12.")
except ValueError:
    partial = tracer.last_trace()  # the call's trace until it raised
    assert partial is not None
    tracer.printlevels(partial, 2)
