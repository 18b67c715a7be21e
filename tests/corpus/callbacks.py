"""Corpus: C functions calling back into Python."""

import functools
import heapq

from .common import Case


def sort_with_keys(words):
    by_length = sorted(words, key=lambda w: (len(w), w))
    by_last = sorted(words, key=lambda w: w[-1], reverse=True)
    case_insensitive = list(words)
    case_insensitive.sort(key=lambda w: w.lower())
    longest = max(words, key=len)
    shortest = min(words, key=lambda w: len(w))
    upper = list(map(str.upper, words))
    reversed_words = list(map(lambda w: w[::-1], words))
    with_a = list(filter(lambda w: "a" in w.lower(), words))
    truthy = list(filter(None, ["", *words[:2], ""]))
    total_length = functools.reduce(lambda acc, w: acc + len(w), words, 0)
    zipped = list(map(lambda a, b: a[0] + b[-1], words, reversed(words)))
    return by_length, by_last, case_insensitive, longest, shortest, upper, reversed_words, with_a, truthy, \
        total_length, zipped


def sort_with_dunder_lt(pairs):
    class Task:
        def __init__(self, priority, name):
            self.priority = priority
            self.name = name

        def __lt__(self, other):
            return (self.priority, self.name) < (other.priority, other.name)

    tasks = [Task(p, n) for p, n in pairs]
    heap = []
    for task in tasks:
        heapq.heappush(heap, task)
    popped = [heapq.heappop(heap).name for _ in range(len(heap))]
    return [t.name for t in sorted(tasks)], popped, min(tasks).name, max(tasks).name


def dict_sorted_by_value(scores):
    ranking = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))
    best = max(scores, key=scores.get)
    grouped = {}
    for name in sorted(scores, key=lambda n: scores[n] % 3):
        grouped.setdefault(scores[name] % 3, []).append(name)
    return list(ranking), best, grouped


CASES = [
    Case("sort_with_keys", sort_with_keys, (("banana", "Apple", "fig", "cherry", "date", "kiwi"),)),
    Case("sort_with_dunder_lt", sort_with_dunder_lt, (((3, "write"), (1, "plan"), (2, "code"), (1, "alpha")),)),
    Case("dict_sorted_by_value", dict_sorted_by_value, ({"ann": 7, "bob": 12, "cy": 7, "dee": 4, "eve": 9},)),
]
