"""The face an embedding library sees: values that print as the program had them
(and never make printing raise), nodes as sequences, kinds by name or code, and
arguments checked with a clear error.

Run:  python examples/face.py
"""

from __future__ import annotations

import math

import tracer
from tracer.views import Kind


class Account:
    def __repr__(self):
        raise RuntimeError("no repr while locked")


def report(n):
    big = 10 ** n
    order = {"b": 2, "a": 1, "c": 3}
    return big, order, Account()


def main() -> None:
    root = tracer.track(report, 5000)
    tracer.printlevels(root, 2)
    print("root[-1] is @%d of %d; root[1:3] are" % (root[-1].index, len(root)),
          [f"@{n.index}" for n in root[1:3]])
    print("kind codes:", {k.label: int(k) for k in Kind})
    print("where(kind=2):", len(tracer.query(root).where(kind=Kind.PRIMITIVE)),
          "where(kind='primitive'):", len(tracer.query(root).where(kind="primitive")))
    for call in ("tracer.printlevels(5)", "tracer.printlevels(root, -1)",
                 "tracer.track(math.sin, 1.0)[0]", "tracer.query(root).where(kind=9)"):
        try:
            eval(call, {"tracer": tracer, "math": math, "root": root})
        except (TypeError, ValueError, IndexError) as err:
            print(f"{call}\n  {type(err).__name__}: {err}")


if __name__ == "__main__":
    main()
