"""The README's example: trace f(x) = sin(x) + x and query its graph."""

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
print()
print(root[3].ir)
