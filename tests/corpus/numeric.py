"""Corpus: math and seeded random."""

import math
import random

from .common import Case


def math_functions(x):
    return (math.floor(x), math.ceil(x), math.trunc(-x), math.isqrt(int(x * 100)), round(math.sin(x), 10),
            round(math.log(x, 2), 10), math.comb(10, 3), math.perm(5, 2), math.factorial(7),
            math.gcd(84, 36), math.lcm(4, 6), math.hypot(3, 4), math.fsum([0.1] * 10), math.copysign(2, -0.0),
            math.isclose(0.1 + 0.2, 0.3), math.prod([1, 2, 3, 4]), round(math.degrees(math.pi / 3), 9),
            math.inf > 1e308, math.dist((0, 0), (3, 4)))


def numeric_integration(n):
    def simpson(f, a, b, steps):
        h = (b - a) / steps
        total = f(a) + f(b)
        for i in range(1, steps):
            total += (4 if i % 2 else 2) * f(a + i * h)
        return total * h / 3

    return (round(simpson(math.sin, 0, math.pi, n), 9), round(simpson(lambda x: x * x, 0, 3, n), 9),
            round(simpson(math.exp, 0, 1, n), 9))


def seeded_random_walk(steps):
    rng = random.Random(42)
    position = 0
    path = []
    for _ in range(steps):
        position += rng.choice((-1, 1))
        path.append(position)
    return path, rng.randint(1, 100), rng.random(), rng.sample(range(50), 5), rng.uniform(1, 2)


def monte_carlo_pi(samples):
    rng = random.Random(42)
    inside = sum(1 for _ in range(samples) if rng.random() ** 2 + rng.random() ** 2 <= 1)
    return 4 * inside / samples


def seeded_random_structures():
    rng = random.Random(42)
    deck = [f"{rank}{suit}" for suit in "SHDC" for rank in "A23456789TJQK"]
    rng.shuffle(deck)
    hand = sorted(deck[:5])
    weights = rng.choices(["a", "b", "c"], weights=[5, 3, 1], k=8)
    gauss = round(rng.gauss(0, 1), 12)
    return hand, weights, gauss, rng.randrange(0, 100, 7), rng.getrandbits(16)


CASES = [
    Case("math_functions", math_functions, (2.75,)),
    Case("numeric_integration", numeric_integration, (40,)),
    Case("seeded_random_walk", seeded_random_walk, (25,)),
    Case("monte_carlo_pi", monte_carlo_pi, (500,)),
    Case("seeded_random_structures", seeded_random_structures),
]
