"""Umlaut's counting-and-replacing example, in Python.

A context substitutes `+` for every `*` that `loop1` executes and counts the
substitutions.  `*` is an operator (an instruction, not a call): it still runs, and
the replacement's result takes the place of its result in the running program.

Run:  python examples/umlaut_replace.py
"""

import operator

import tracer


def loop1(a, n):
    a = 2 * a
    for i in range(n):
        a = a * n
    return a


class CountingReplacer(tracer.Context):
    """Replaces operator.mul by operator.add and counts how often it did."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def substitute(self, f, /, *args, **kwargs):
        if f is operator.mul:
            self.count += 1
            return operator.add
        return None


def main():
    ctx = CountingReplacer()
    root = tracer.track(loop1, 2.0, 3, ctx=ctx)
    print(f"loop1(2.0, 3) = {loop1(2.0, 3)} untracked; {root.value} under the context; "
          f"{ctx.count} substitutions")
    tracer.printlevels(root, 2)


if __name__ == "__main__":
    main()
