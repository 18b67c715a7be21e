"""Corpus: Comprehensions and generator expressions."""


from .common import Case


def comprehension_variety(n):
    squares = [i * i for i in range(n)]
    evens = [i for i in range(n) if i % 2 == 0]
    pairs = [(i, j) for i in range(3) for j in range(i, 3) if i != j]
    grid = [[r * c for c in range(3)] for r in range(3)]
    index = {word: len(word) for word in ("alpha", "beta", "gamma") if "a" in word}
    remainders = {i % 4 for i in range(n)}
    flattened = [x for row in grid for x in row]
    labels = ["even" if i % 2 == 0 else "odd" for i in range(4)]
    return squares, evens, pairs, grid, index, remainders, flattened, labels


def generator_expression_consumers(values):
    return (
        sum(v * v for v in values),
        any(v < 0 for v in values),
        all(isinstance(v, int) for v in values),
        list(v for v in values if v % 3 == 0),
        max((abs(v) for v in values), default=0),
        tuple(str(v) for v in values[:3]),
        sorted(set(v % 5 for v in values)),
        "".join(chr(65 + v % 26) for v in values),
        min(v for v in values if v > 0),
        dict((v, v * 2) for v in values[:2]),
    )


def matrix_transpose_and_multiply(a, b):
    transposed = [list(row) for row in zip(*a)]
    product = [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]
    identity = [[1 if i == j else 0 for j in range(len(a))] for i in range(len(a))]
    return transposed, product, identity


def sieve_of_eratosthenes(limit):
    sieve = [True] * (limit + 1)
    sieve[0:2] = [False, False]
    for i in range(2, int(limit ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = [False] * len(range(i * i, limit + 1, i))
    return [i for i, is_prime in enumerate(sieve) if is_prime]


def pythagorean_triples(limit):
    return [(a, b, c) for a in range(1, limit) for b in range(a, limit) for c in range(b, limit)
            if a * a + b * b == c * c]


def pascal_triangle(rows):
    triangle = [[1]]
    for _ in range(rows - 1):
        prev = triangle[-1]
        triangle.append([1] + [a + b for a, b in zip(prev, prev[1:])] + [1])
    return triangle


CASES = [
    Case("comprehension_variety", comprehension_variety, (10,)),
    Case("generator_expression_consumers", generator_expression_consumers, ((3, -7, 12, 25, 9, 30),)),
    Case("matrix_transpose_and_multiply", matrix_transpose_and_multiply,
         (((1, 2, 3), (4, 5, 6)), ((7, 8), (9, 10), (11, 12)))),
    Case("sieve_of_eratosthenes", sieve_of_eratosthenes, (120,)),
    Case("pythagorean_triples", pythagorean_triples, (21,)),
    Case("pascal_triangle", pascal_triangle, (8,)),
]
