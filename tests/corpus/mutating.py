"""Corpus: Functions that mutate their arguments (used with make_args)."""

import random

from .common import Case
from .operators import Tally


def bubble_sort_in_place(xs):
    n = len(xs)
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if xs[j] > xs[j + 1]:
                xs[j], xs[j + 1] = xs[j + 1], xs[j]
                swapped = True
        if not swapped:
            break
    return xs


def normalize_records_in_place(records):
    for rec in records:
        rec["name"] = rec.get("name", "").strip().title()
        rec.setdefault("tags", [])
        rec["tags"].append("normalized")
        if "age" in rec:
            rec["age"] = int(rec["age"])
        rec.pop("tmp", None)
    return records


def rotate_in_place(xs, k):
    k %= len(xs)
    xs[:] = xs[-k:] + xs[:-k]
    return xs


def remove_duplicates_in_place(xs):
    seen = set()
    i = 0
    while i < len(xs):
        if xs[i] in seen:
            del xs[i]
        else:
            seen.add(xs[i])
            i += 1
    return xs


def seeded_shuffle_in_place(xs):
    rng = random.Random(42)
    rng.shuffle(xs)
    return xs


def apply_discounts_in_place(cart, *, threshold=50):
    for item, price in list(cart.items()):
        if price >= threshold:
            cart[item] = round(price * 0.9, 2)
        elif price <= 0:
            del cart[item]
    cart["_total"] = round(sum(cart.values()), 2)
    return cart


def drive_tally_in_place(tally, steps):
    for s in steps:
        tally.bump(s)
    tally.n += 1000
    return tally.n, tally.history


CASES = [
    Case("bubble_sort_in_place", bubble_sort_in_place, make_args=lambda: (([5, 2, 9, 1, 5, 6],), {})),
    Case("normalize_records_in_place", normalize_records_in_place,
         make_args=lambda: (([{"name": "  ada lovelace ", "age": "36", "tmp": 1}, {"tags": ["x"]}],), {})),
    Case("rotate_in_place", rotate_in_place, make_args=lambda: (([1, 2, 3, 4, 5, 6, 7],), {"k": 10})),
    Case("remove_duplicates_in_place", remove_duplicates_in_place,
         make_args=lambda: (([3, 1, 3, 2, 1, 5, 2, 3],), {})),
    Case("seeded_shuffle_in_place", seeded_shuffle_in_place, make_args=lambda: ((list(range(12)),), {})),
    Case("apply_discounts_in_place", apply_discounts_in_place,
         make_args=lambda: (({"tv": 499.0, "cable": 9.5, "coupon": -5.0, "desk": 50},), {"threshold": 50})),
    Case("drive_tally_in_place", drive_tally_in_place, make_args=lambda: ((Tally(), [2, 4, 6]), {})),
]
