"""Corpus: Arithmetic, bitwise and unary operators; Comparisons, identity and membership; Augmented assignment on locals, items and attributes."""


from .common import Case


def integer_arithmetic(a, b):
    return (a + b, a - b, a * b, a / b, a // b, a % b, a ** 3, -a // b, -a % b,
            divmod(a, b), pow(a, 2, b), abs(b - a))


def float_arithmetic(x, y):
    return (x + y, x - y, x * y, x / y, x // y, x % y, x ** 0.5, round(x * y, 3),
            -x, int(x), float(int(y)), x > y, 2 ** -3)


def evaluate_polynomial(coeffs, x):
    result = 0
    for c in coeffs:
        result = result * x + c
    return result


def euclid_gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def newton_sqrt(value, iterations=20):
    guess = value / 2.0
    for _ in range(iterations):
        guess = (guess + value / guess) / 2.0
    return round(guess, 12)


def modular_power(base, exponent, modulus):
    result = 1
    base %= modulus
    while exponent > 0:
        if exponent & 1:
            result = (result * base) % modulus
        exponent >>= 1
        base = (base * base) % modulus
    return result


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def mixed_numeric_tower(n):
    total = 0
    for i in range(1, n + 1):
        total += i
        total -= i / 4
        total *= 1.01 if i % 2 else 1
    return round(total, 6), complex(n, -n) * 1j, True + True, 10 ** -2, 7 // 2.0, -7 % 3


def bitwise_table(a, b):
    return {
        "and": a & b, "or": a | b, "xor": a ^ b, "not_a": ~a,
        "shl": a << 3, "shr": b >> 2, "mask": (a | b) & 0xFF ^ 0x0F,
    }


def popcount_kernighan(n):
    count = 0
    while n:
        n &= n - 1
        count += 1
    return count


def gray_code_sequence(bits):
    return [i ^ (i >> 1) for i in range(1 << bits)]


def reverse_bits(value, width):
    result = 0
    for _ in range(width):
        result = (result << 1) | (value & 1)
        value >>= 1
    return result


def pack_and_unpack_rgb(r, g, b):
    packed = (r & 0xFF) << 16 | (g & 0xFF) << 8 | b & 0xFF
    return packed, ((packed >> 16) & 0xFF, (packed >> 8) & 0xFF, packed & 0xFF), hex(packed)


def unary_operators(x, flag):
    y = 2.5
    return (-x, +x, ~x, not x, not flag, -(-x), ~~x, -abs(x), +(-x), -y, not not flag, -True)


def classify_triangle(a, b, c):
    a, b, c = sorted((a, b, c))
    if not 0 < a <= b <= c:
        return "invalid"
    if a + b <= c:
        return "degenerate"
    if a == b == c:
        return "equilateral"
    if a == b or b == c:
        return "isosceles"
    if a * a + b * b == c * c:
        return "right"
    return "scalene"


def chained_comparisons(values, lo, hi):
    inside = [v for v in values if lo <= v < hi]
    increasing = all(a < b for a, b in zip(values, values[1:]))
    return inside, increasing, lo < hi > 0 != lo, values[0] == values[-1] != 0, 1 < 2 < 3 > 2 >= 2


def membership_and_identity(items, probe):
    copied = items[:]
    return {
        "found": probe in items,
        "missing": probe not in items,
        "none_flags": [x is None for x in items],
        "not_none": [x for x in items if x is not None],
        "same": items is items,
        "copy_is_new": copied is not items,
        "copy_equal": copied == items,
        "key_in_dict": "a" in {"a": 1},
        "substring": "ell" in "hello",
        "range_member": 7 in range(0, 10, 7),
        "true_is_true": (probe == probe) is True,
    }


def augmented_operators(n):
    x = n
    x += 3
    x -= 1
    x *= 4
    x //= 3
    x %= 17
    x **= 2
    x <<= 2
    x >>= 1
    x &= 0xFF
    x |= 0x100
    x ^= 0x55
    y = float(n)
    y /= 8
    s = "ab"
    s *= 3
    s += "!"
    t = [1]
    t += [2, 3]
    t *= 2
    return x, y, s, t


def running_statistics(samples):
    count = 0
    total = 0.0
    total_sq = 0.0
    lo = hi = samples[0]
    for s in samples:
        count += 1
        total += s
        total_sq += s * s
        if s < lo:
            lo = s
        elif s > hi:
            hi = s
    mean = total / count
    variance = total_sq / count - mean ** 2
    return count, round(mean, 9), round(variance, 9), lo, hi


def letter_histogram(text):
    counts = [0] * 26
    for ch in text.lower():
        if "a" <= ch <= "z":
            counts[ord(ch) - ord("a")] += 1
    return {chr(i + ord("a")): c for i, c in enumerate(counts) if c}


def item_augmented_assignment(rows, cols):
    grid = [[0] * cols for _ in range(rows)]
    for r in range(rows):
        for c in range(cols):
            grid[r][c] += r * c
            grid[r][c] *= 2
    totals = {"even": 0, "odd": 0}
    for row in grid:
        for v in row:
            totals["even" if v % 4 == 0 else "odd"] += v
    prefix = list(range(1, 6))
    for i in range(1, len(prefix)):
        prefix[i] += prefix[i - 1]
    spliced = [1, 2, 3, 4]
    spliced[1:3] += [9]
    return grid, totals, prefix, spliced


class Tally:
    def __init__(self):
        self.n = 0
        self.history = []

    def bump(self, by=1):
        self.n += by
        self.history += [self.n]
        return self


def attribute_augmented_assignment(steps):
    tally = Tally()
    for s in steps:
        tally.bump(s)
    tally.n -= 1
    tally.n *= 3
    tally.history[-1] += 100
    return tally.n, tally.history


CASES = [
    Case("integer_arithmetic", integer_arithmetic, (17, 5)),
    Case("integer_arithmetic_negative", integer_arithmetic, (-23, 4)),
    Case("float_arithmetic", float_arithmetic, (7.5, 2.25)),
    Case("evaluate_polynomial", evaluate_polynomial, ([2, -3, 0, 5], 3)),
    Case("euclid_gcd", euclid_gcd, (1071, 462)),
    Case("newton_sqrt", newton_sqrt, (2.0,)),
    Case("newton_sqrt_kw", newton_sqrt, (144.0,), {"iterations": 8}),
    Case("modular_power", modular_power, (7, 128, 13)),
    Case("collatz_steps", collatz_steps, (27,)),
    Case("mixed_numeric_tower", mixed_numeric_tower, (9,)),
    Case("bitwise_table", bitwise_table, (0b1011_0110, 0b0110_1101)),
    Case("popcount_kernighan", popcount_kernighan, (0xDEADBEEF,)),
    Case("gray_code_sequence", gray_code_sequence, (4,)),
    Case("reverse_bits", reverse_bits, (0b1101, 8)),
    Case("pack_and_unpack_rgb", pack_and_unpack_rgb, (300, 128, 7)),
    Case("unary_operators", unary_operators, (5, True)),
    Case("unary_operators_zero", unary_operators, (0, False)),
    Case("classify_triangle_right", classify_triangle, (5, 3, 4)),
    Case("classify_triangle_equilateral", classify_triangle, (2, 2, 2)),
    Case("classify_triangle_isosceles", classify_triangle, (5, 5, 8)),
    Case("classify_triangle_degenerate", classify_triangle, (1, 2, 3)),
    Case("classify_triangle_invalid", classify_triangle, (0, 2, 3)),
    Case("classify_triangle_scalene", classify_triangle, (4, 6, 7)),
    Case("chained_comparisons", chained_comparisons, ([3, 8, 1, 9, 4, 3], 2, 9)),
    Case("membership_and_identity", membership_and_identity, ([1, None, "a", 3.5, None], "a")),
    Case("augmented_operators", augmented_operators, (13,)),
    Case("running_statistics", running_statistics, ([4.0, 8.5, -1.25, 3.0, 10.0],)),
    Case("letter_histogram", letter_histogram, ("The quick brown fox jumps over the lazy dog!",)),
    Case("item_augmented_assignment", item_augmented_assignment, (3, 4)),
    Case("attribute_augmented_assignment", attribute_augmented_assignment, ([3, 1, 4, 1, 5],)),
]
