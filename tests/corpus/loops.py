"""Corpus: Loops and iteration protocols."""

import itertools

from .common import Case, VOWELS


def loop_shapes(mapping, text, xs, ys):
    out = []
    for key, value in mapping.items():
        out.append(f"{key}={value}")
    for ch in text:
        if ch in VOWELS:
            out.append(ch.upper())
    for i, x in enumerate(xs, start=1):
        out.append(i * x)
    for a, b in zip(xs, ys):
        out.append(a - b)
    for x in reversed(xs):
        out.append(-x)
    for i in range(10, 0, -3):
        out.append(i)
    for key in mapping:
        out.append(key * 2)
    for value in sorted(mapping.values()):
        out.append(value)
    return out


def first_prime_above(n):
    candidate = n + 1
    while True:
        for d in range(2, int(candidate ** 0.5) + 1):
            if candidate % d == 0:
                break
        else:
            return candidate
        candidate += 1


def find_with_while_else(xs, target):
    i = 0
    while i < len(xs):
        if xs[i] == target:
            break
        i += 1
    else:
        return -1
    return i


def continue_and_break(values):
    kept = []
    for v in values:
        if v < 0:
            continue
        if v > 100:
            break
        if v % 2:
            kept.append(v)
            continue
        kept.append(v // 2)
    n = 0
    while True:
        n += 1
        if n % 3:
            continue
        if n > 10:
            break
    return kept, n


class Countdown:
    def __init__(self, start):
        self.current = start

    def __iter__(self):
        return self

    def __next__(self):
        if self.current <= 0:
            raise StopIteration
        self.current -= 1
        return self.current + 1


class FibonacciIterable:
    def __init__(self, limit):
        self.limit = limit

    def __iter__(self):
        a, b = 0, 1
        while a < self.limit:
            yield a
            a, b = b, a + b


def user_iterators(n):
    countdown = list(Countdown(n))
    total = 0
    for value in Countdown(n):
        total += value
    it = iter(Countdown(3))
    first = next(it)
    second = next(it)
    rest = list(it)
    exhausted = next(it, "done")
    fibs = list(FibonacciIterable(50))
    pairs = list(zip(Countdown(3), FibonacciIterable(100)))
    return countdown, total, first, second, rest, exhausted, fibs, pairs, sum(FibonacciIterable(1000))


def _chunks(seq, size):
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def _flatten(nested):
    for item in nested:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item


def _numbered_lines(text):
    count = 0
    for count, line in enumerate(text.splitlines(), 1):
        yield f"{count:02d}: {line}"
    return count


def _delegating_report(text):
    total = yield from _numbered_lines(text)
    yield f"total={total}"


def generator_pipelines(nested, text):
    flat = list(_flatten(nested))
    chunks = list(_chunks(flat, 3))
    evens = (x for x in flat if x % 2 == 0)
    doubled = (x * 2 for x in evens)
    return flat, chunks, list(doubled), list(_delegating_report(text)), sum(_flatten([[1, [2]], 3]))


def _running_average():
    total = 0.0
    count = 0
    average = None
    while True:
        value = yield average
        if value is None:
            return count
        total += value
        count += 1
        average = total / count


def generator_send_throw_close(values):
    averager = _running_average()
    next(averager)
    averages = [averager.send(v) for v in values]
    try:
        averager.send(None)
    except StopIteration as stop:
        finished_with = stop.value

    def resilient():
        handled = []
        while True:
            try:
                yield len(handled)
            except ValueError as exc:
                handled.append(str(exc))
            except GeneratorExit:
                handled.append("closed")
                raise

    gen = resilient()
    states = [next(gen), gen.throw(ValueError("first")), gen.throw(ValueError("second"))]
    gen.close()
    return averages, finished_with, states


def itertools_usage(values):
    return (
        list(itertools.accumulate(values, lambda a, b: a * 2 + b)),
        [(k, len(list(g))) for k, g in itertools.groupby(sorted(values), key=lambda v: v // 10)],
        list(itertools.starmap(lambda a, b: a ** b, [(2, 3), (3, 2)])),
        list(itertools.islice(itertools.count(5, 3), 4)),
        list(itertools.combinations(values[:4], 2)),
        list(itertools.chain.from_iterable([[1], [2, 3]])),
        list(itertools.takewhile(lambda v: v < 30, values)),
        list(itertools.product("ab", repeat=2)),
        list(itertools.pairwise(values[:4])),
    )


CASES = [
    Case("loop_shapes", loop_shapes, ({"b": 2, "a": 1}, "education", [3, 1, 4], [1, 5, 9, 2])),
    Case("first_prime_above", first_prime_above, (89,)),
    Case("find_with_while_else_hit", find_with_while_else, ([4, 8, 15, 16, 23, 42], 16)),
    Case("find_with_while_else_miss", find_with_while_else, ([4, 8, 15], 99)),
    Case("continue_and_break", continue_and_break, ([3, -1, 8, 7, -5, 120, 4],)),
    Case("user_iterators", user_iterators, (5,)),
    Case("generator_pipelines", generator_pipelines, ([1, [2, 3, (4, [5, 6])], 7, [[8]]], "alpha\nbeta\ngamma")),
    Case("generator_send_throw_close", generator_send_throw_close, ([10, 20, 60],)),
    Case("itertools_usage", itertools_usage, ([5, 12, 17, 23, 31, 38, 4],)),
]
