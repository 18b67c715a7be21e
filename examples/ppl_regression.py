"""tracer.ppl on a small regression: choices, relations, condition, update, diff.

Run:  python examples/ppl_regression.py
"""

import random

import tracer.ppl as ppl


def regression(r, n):
    a = r.gauss(0.0, 1.0)
    b = r.gauss(0.0, 1.0)
    ys = []
    for i in range(n):
        ys.append(r.gauss(a + b * i, 0.5))
    return sum(ys) / len(ys)


def main():
    t = ppl.trace(regression, random.Random(0), 3)
    print(t)
    print(t.show())
    print(t.relations())
    c = ppl.condition(regression, {"regression/gauss@L16[2]": 1.0}, random.Random(1), 3)
    print(c.choices["regression/gauss@L16[2]"])
    new, weight, discard = ppl.update(t, {"regression/gauss@L13": 0.5})
    print(f"weight {weight:.4f} = {new.log_joint:.4f} - ({t.log_joint:.4f}); discard {discard}")
    print(new.update_path, new.update_stats)
    print(ppl.diff(t, new))


if __name__ == "__main__":
    main()
