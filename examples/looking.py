"""Looking at traces and comparing two: the summary table, a diff of two runs of the
stochastic recursion `geom`, and the pictures of `geom` and `h`.

Run:  python examples/looking.py            (prints the summary and the diff)
      python examples/looking.py docs/      (also draws docs/geom.svg and docs/h.svg;
                                             needs Graphviz's dot program)
"""

import os
import random
import sys

import tracer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from irtracker_examples import geom, h  # noqa: E402


def main(pictures=None):
    root = tracer.track(geom, 1, 0.5, random.Random(5))
    print(tracer.summary(root))
    print()
    a = tracer.track(geom, 1, 0.5, random.Random(2))
    b = tracer.track(geom, 1, 0.5, random.Random(5))
    d = tracer.diff(a, b)
    print(d)
    print()
    div = d.divergence  # None when the traces agree
    if div is not None:
        print("first divergence as data:", div.reason, div.path, div.line)
    if pictures:
        for name, traced, levels in (("geom", a, 4), ("h", tracer.track(h, 2.0, 3), 2)):
            path = tracer.render(traced, os.path.join(pictures, f"{name}.svg"), levels=levels)
            print("drew", path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
