"""IRTracker's geom as a script, for the command line's examples:

    python -m tracer run examples/geom_seed.py SEED
"""

import random
import sys


def geom(n, beta, rng):
    return n if rng.random() < beta else geom(n + 1, beta, rng)


print("geom:", geom(1, 0.5, random.Random(int(sys.argv[1]))))
