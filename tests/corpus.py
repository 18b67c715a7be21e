"""Corpus of small deterministic functions and their inputs for the traced-versus-untraced differential test."""

import contextlib
import dataclasses
import functools
import heapq
import itertools
import math
import operator
import random
import re
from collections import Counter, OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:
    import numpy as np
except ImportError:  # numpy is a declared dependency; a bare interpreter may still lack it
    np = None


@dataclass(frozen=True)
class Case:
    """One corpus entry: call ``func(*args, **kwargs)`` and compare the outcome.

    When ``make_args`` is set it is called for every run and returns fresh
    ``(args, kwargs)``; use it for functions that mutate their arguments.
    When ``raises`` is set the call must raise exactly that exception type.
    """

    name: str
    func: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    raises: type[BaseException] | None = None
    make_args: Callable[[], tuple[tuple, dict]] | None = None

    def arguments(self) -> tuple[tuple, dict]:
        """Return the ``(args, kwargs)`` to use for one run (fresh when ``make_args`` is set)."""
        if self.make_args is not None:
            args, kwargs = self.make_args()
            return tuple(args), dict(kwargs)
        return self.args, dict(self.kwargs)

    def run(self) -> Any:
        """Call the function once, untraced, with arguments from :meth:`arguments`."""
        args, kwargs = self.arguments()
        return self.func(*args, **kwargs)


# --------------------------------------------------------------------------
# Module-level constants (read, never written, by the functions below)
# --------------------------------------------------------------------------

TAX_RATE = 0.2
GOLDEN_RATIO = (1 + 5 ** 0.5) / 2
ROMAN_TABLE = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)
VOWELS = frozenset("aeiou")
DIRECTIONS = ((0, 1), (1, 0), (0, -1), (-1, 0))


# --------------------------------------------------------------------------
# Exceptions used by the corpus
# --------------------------------------------------------------------------

class ParseError(Exception):
    """Raised by the tiny expression parser."""


class ValidationError(ValueError):
    def __init__(self, field_name, message):
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


class ConfigError(LookupError):
    """Raised when a configuration key cannot be resolved."""


# --------------------------------------------------------------------------
# Arithmetic, bitwise and unary operators
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Comparisons, identity and membership
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Augmented assignment on locals, items and attributes
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Calling conventions
# --------------------------------------------------------------------------

def _format_call(a, b=2, *rest, scale=1, **options):
    return (a, b, rest, scale, sorted(options.items()))


def _keyword_only(x, *, required, optional="opt"):
    return f"{x}-{required}-{optional}"


def _positional_only(a, b, /, c, *, d):
    return a * 1000 + b * 100 + c * 10 + d


def call_conventions():
    seq = [10, 20, 30]
    mapping = {"scale": 5, "tag": "t"}
    return [
        _format_call(1),
        _format_call(1, 3),
        _format_call(a=1, b=4),
        _format_call(1, 2, 3, 4, scale=2),
        _format_call(*seq),
        _format_call(*seq, **mapping),
        _format_call(0, *seq[1:], extra=True, **{"more": 1}),
        _keyword_only("x", required="r"),
        _keyword_only(x="y", required="r", optional="o"),
        _positional_only(1, 2, 3, d=4),
        _positional_only(*(1, 2), c=3, **{"d": 4}),
        _format_call(*range(3), *"ab", scale=0),
    ]


def weighted_total(*values, weight=1.0, **named):
    total = sum(values) * weight
    for _key, val in sorted(named.items()):
        total += val
    return round(total, 6)


def forward_everything(*args, **kwargs):
    def target(first, second=0, *more, flag=False, **extra):
        return first, second, more, flag, sorted(extra)

    return target(*args, **kwargs), target(*args[:1], flag=not kwargs.get("flag", False))


# --------------------------------------------------------------------------
# Methods of builtin types
# --------------------------------------------------------------------------

def word_frequencies(text):
    counts = {}
    for raw in text.split():
        word = raw.strip(".,;:!?\"'").lower()
        if word:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]


def list_method_tour(seed):
    xs = list(seed)
    xs.append(1)
    xs.extend([9, 2])
    xs.insert(0, 7)
    popped = xs.pop()
    popped_front = xs.pop(0)
    xs.remove(9)
    position = xs.index(1)
    occurrences = xs.count(3)
    xs.reverse()
    ordered = xs.copy()
    ordered.sort(reverse=True)
    cleared = ordered[:]
    cleared.clear()
    return xs, ordered, cleared, popped, popped_front, position, occurrences


def dict_method_tour(pairs):
    d = dict(pairs)
    d.setdefault("z", 26)
    d.setdefault("a", -1)
    d.update(y=25, x=24)
    removed = d.pop("a", None)
    missing = d.pop("nope", "default")
    keys = sorted(d.keys())
    values = sorted(d.values())
    last = d.popitem()
    merged = d | {"m": 13}
    d |= {"n": 14}
    fromkeys = dict.fromkeys("abc", 0)
    return d, removed, missing, keys, values, last, merged, fromkeys, d.get("q"), d.get("n", 0)


def set_operations(a, b):
    sa, sb = set(a), set(b)
    sa.add(100)
    sa.discard(-1)
    sb.update({7, 8})
    return (sa | sb, sa & sb, sa - sb, sa ^ sb, sa <= (sa | sb), frozenset(sb).isdisjoint({0}),
            sorted(sa.union(sb)), {x % 3 for x in sa})


def string_method_tour(s):
    return {
        "upper": s.upper(), "title": s.title(), "words": s.split(), "csv": ",".join(s.split()),
        "replace": s.replace("o", "0"), "find": s.find("o"), "rfind": s.rfind("o"),
        "count": s.count("o"), "startswith": s.startswith("Th"), "endswith": s.endswith(("g", "x")),
        "partition": s.partition(" "), "rsplit": s.rsplit(" ", 1), "center": s.center(30, "*"),
        "zfill": "42".zfill(6), "strip": f"  {s}  ".strip(), "isdigit": [w.isdigit() for w in s.split()],
        "swap": s.swapcase(), "encoded": s.encode()[:5], "ljust": s[:4].ljust(6, "."),
        "translate": s.translate(str.maketrans("aeiou", "AEIOU")),
    }


def parse_key_value_config(text):
    config = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {line_no}: missing '='")
        key = key.strip().lower()
        value = value.strip()
        if value.isdigit():
            value = int(value)
        elif value.lower() in ("true", "false"):
            value = value.lower() == "true"
        config[key] = value
    return config


def bytes_checksum(payload):
    buf = bytearray(payload.encode("utf-8"))
    for i in range(len(buf)):
        buf[i] ^= 0x5A
    checksum = 0
    for byte in buf:
        checksum = (checksum * 31 + byte) & 0xFFFFFFFF
    return bytes(buf[:6]), checksum, buf.hex()[:12]


# --------------------------------------------------------------------------
# User classes: properties, static/class methods, super(), dunders
# --------------------------------------------------------------------------

class Shape:
    registry_name = "shape"

    def __init__(self, name):
        self.name = name

    @property
    def area(self):
        return 0.0

    def describe(self):
        return f"{self.name} with area {self.area:.2f}"

    @staticmethod
    def inches_to_cm(value, factor=2.54):
        return round(value * factor, 4)

    @classmethod
    def kind(cls):
        return cls.registry_name


class Rectangle(Shape):
    registry_name = "rectangle"

    def __init__(self, width, height, name="rectangle"):
        super().__init__(name)
        self.width = width
        self.height = height

    @property
    def area(self):
        return self.width * self.height

    @classmethod
    def from_string(cls, text):
        w, h = (int(p) for p in text.split("x"))
        return cls(w, h)


class Square(Rectangle):
    registry_name = "square"

    def __init__(self, side):
        super().__init__(side, side, name="square")

    def describe(self):
        return "square: " + super().describe()


class Circle(Shape):
    registry_name = "circle"

    def __init__(self, radius):
        super().__init__("circle")
        self._radius = radius

    @property
    def radius(self):
        return self._radius

    @radius.setter
    def radius(self, value):
        if value < 0:
            raise ValueError("negative radius")
        self._radius = value

    @property
    def area(self):
        return math.pi * self._radius ** 2


def shape_report(specs):
    shapes = []
    for kind, *dims in specs:
        if kind == "rect":
            shapes.append(Rectangle(*dims))
        elif kind == "square":
            shapes.append(Square(*dims))
        elif kind == "circle":
            shapes.append(Circle(*dims))
        else:
            shapes.append(Rectangle.from_string(dims[0]))
    circle = Circle(1)
    circle.radius = 2
    circle.radius += 1
    return ([s.describe() for s in shapes], [type(s).kind() for s in shapes], Shape.inches_to_cm(10),
            Square.inches_to_cm(1, factor=3), circle.radius, round(sum(s.area for s in shapes), 6),
            [isinstance(s, Rectangle) for s in shapes])


class Vector:
    def __init__(self, *components):
        self.components = tuple(components)

    def __add__(self, other):
        return Vector(*(a + b for a, b in zip(self, other)))

    def __sub__(self, other):
        return Vector(*(a - b for a, b in zip(self, other)))

    def __mul__(self, k):
        return Vector(*(k * c for c in self))

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __eq__(self, other):
        return isinstance(other, Vector) and self.components == other.components

    def __hash__(self):
        return hash(self.components)

    def __lt__(self, other):
        return abs(self) < abs(other)

    def __abs__(self):
        return math.sqrt(sum(c * c for c in self))

    def __len__(self):
        return len(self.components)

    def __getitem__(self, index):
        return self.components[index]

    def __iter__(self):
        return iter(self.components)

    def __bool__(self):
        return any(self.components)

    def __repr__(self):
        return f"Vector{self.components!r}"

    def dot(self, other):
        return sum(a * b for a, b in zip(self, other))


def vector_algebra(a, b):
    u, v = Vector(*a), Vector(*b)
    w = u + v
    w -= Vector(1, 1, 1)
    scaled = 2 * u
    vectors = sorted([u, v, w, scaled, -v])
    return (w, scaled, -u, u.dot(v), abs(Vector(3, 4, 0)), len(w), w[1], w[-2:], list(reversed(w)),
            bool(Vector(0, 0, 0)), bool(u), vectors, u == Vector(*a), u != v, max(u, v), {u, Vector(*a)},
            repr(w))


class Polynomial:
    def __init__(self, coeffs):
        coeffs = list(coeffs)
        while len(coeffs) > 1 and coeffs[-1] == 0:
            coeffs.pop()
        self.coeffs = coeffs

    def __call__(self, x):
        return sum(c * x ** i for i, c in enumerate(self.coeffs))

    def __add__(self, other):
        return Polynomial(a + b for a, b in itertools.zip_longest(self.coeffs, other.coeffs, fillvalue=0))

    def __mul__(self, other):
        out = [0] * (len(self.coeffs) + len(other.coeffs) - 1)
        for i, a in enumerate(self.coeffs):
            for j, b in enumerate(other.coeffs):
                out[i + j] += a * b
        return Polynomial(out)

    def derivative(self):
        return Polynomial([i * c for i, c in enumerate(self.coeffs)][1:] or [0])

    def __eq__(self, other):
        return isinstance(other, Polynomial) and self.coeffs == other.coeffs

    def __repr__(self):
        terms = [f"{c}x^{i}" for i, c in enumerate(self.coeffs) if c]
        return " + ".join(reversed(terms)) or "0"


def polynomial_algebra(p_coeffs, q_coeffs, points):
    p, q = Polynomial(p_coeffs), Polynomial(q_coeffs)
    product = p * q
    total = p + q
    return (product, total, [product(x) for x in points], list(map(total, points)),
            p.derivative(), repr(product.derivative().derivative()), p * Polynomial([1]) == p)


@functools.total_ordering
class Money:
    def __init__(self, cents, currency="EUR"):
        self.cents = cents
        self.currency = currency

    def __add__(self, other):
        if isinstance(other, int):
            return Money(self.cents + other, self.currency)
        if other.currency != self.currency:
            raise ValueError("currency mismatch")
        return Money(self.cents + other.cents, self.currency)

    __radd__ = __add__

    def __eq__(self, other):
        return isinstance(other, Money) and (self.cents, self.currency) == (other.cents, other.currency)

    def __lt__(self, other):
        return self.cents < other.cents

    def __hash__(self):
        return hash((self.cents, self.currency))

    def __str__(self):
        return f"{self.cents // 100}.{self.cents % 100:02d} {self.currency}"


def money_operations(amounts):
    wallet = [Money(c) for c in amounts]
    total = sum(wallet)
    return (str(total), str(max(wallet)), str(min(wallet)), Money(5) <= Money(7), Money(9) >= Money(9),
            sorted(wallet)[1] == Money(sorted(amounts)[1]), [str(m) for m in sorted(set(wallet))])


class Inventory:
    def __init__(self):
        self._items = {}

    def __setitem__(self, name, qty):
        if qty < 0:
            raise ValueError(name)
        self._items[name] = qty

    def __getitem__(self, name):
        return self._items.get(name, 0)

    def __delitem__(self, name):
        del self._items[name]

    def __contains__(self, name):
        return self._items.get(name, 0) > 0

    def __len__(self):
        return sum(1 for qty in self._items.values() if qty)

    def __iter__(self):
        return iter(sorted(self._items))

    def __bool__(self):
        return len(self) > 0


def inventory_operations(orders):
    inv = Inventory()
    empty_before = not inv
    for name, qty in orders:
        inv[name] += qty
    inv["widget"] -= 1
    del inv["gadget"]
    return (empty_before, bool(inv), len(inv), list(inv), "widget" in inv, "gadget" in inv,
            inv["nothing"], {name: inv[name] for name in inv})


class Squares:
    """Iterable through the legacy ``__getitem__`` protocol only."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, index):
        if index >= self.n:
            raise IndexError(index)
        return index * index


def legacy_getitem_iteration(n):
    total = 0
    for sq in Squares(n):
        total += sq
    return total, list(Squares(n)), 9 in Squares(n), max(Squares(n))


class AttrRecord:
    def __init__(self, **fields):
        self.__dict__["_fields"] = dict(fields)

    def __getattr__(self, name):
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self._fields[name] = value

    def __delattr__(self, name):
        del self._fields[name]


def dynamic_attribute_access(fields):
    rec = AttrRecord(**fields)
    rec.extra = rec.base * 2
    rec.base += 1
    del rec.temp
    values = [getattr(rec, name, None) for name in ("base", "extra", "temp", "label")]
    setattr(rec, "label", rec.label.upper())
    return values, hasattr(rec, "temp"), rec.label, sorted(rec._fields.items())


class Base:
    def greet(self):
        return ["Base"]


class Left(Base):
    def greet(self):
        return ["Left"] + super().greet()


class Right(Base):
    def greet(self):
        return ["Right"] + super().greet()


class Diamond(Left, Right):
    def greet(self):
        return ["Diamond"] + super().greet()


class Animal:
    sound = "..."

    def __init__(self, name):
        self.name = name

    def speak(self):
        return f"{self.name} says {self.sound}"

    def __eq__(self, other):
        return type(self) is type(other) and self.name == other.name


class Dog(Animal):
    sound = "woof"


class Puppy(Dog):
    def speak(self):
        return super().speak() + "!"


def inheritance_and_mro():
    pets = [Dog("rex"), Puppy("bit"), Animal("generic")]
    return ([p.speak() for p in pets], Diamond().greet(), [c.__name__ for c in Diamond.__mro__],
            isinstance(pets[1], Dog), issubclass(Puppy, Animal), Dog("a") == Dog("a"), Dog("a") == Puppy("a"))


class Accumulator:
    def __init__(self, start=0):
        self.total = start
        self.calls = 0

    def __call__(self, value):
        self.calls += 1
        self.total += value
        return self.total


def callable_objects(values):
    acc = Accumulator(100)
    running = [acc(v) for v in values]
    via_map = list(map(Accumulator(), values))
    return running, acc.calls, acc.total, via_map, callable(acc)


@dataclass(order=True, frozen=True)
class Version:
    major: int
    minor: int = 0
    patch: int = 0

    @classmethod
    def parse(cls, text):
        return cls(*map(int, text.split(".")))

    def bump(self, part):
        if part == "major":
            return Version(self.major + 1)
        if part == "minor":
            return dataclasses.replace(self, minor=self.minor + 1, patch=0)
        return dataclasses.replace(self, patch=self.patch + 1)

    def __str__(self):
        return f"{self.major}.{self.minor}.{self.patch}"


def version_sorting(texts):
    versions = sorted(Version.parse(t) for t in texts)
    newest = max(versions)
    return ([str(v) for v in versions], str(newest.bump("minor")), str(newest.bump("major")),
            str(versions[0].bump("patch")), Version(1) < Version(1, 0, 1), dataclasses.astuple(newest))


@dataclass
class Employee:
    name: str
    dept: str
    salary: int
    skills: list = field(default_factory=list)

    def __post_init__(self):
        if self.salary < 0:
            raise ValidationError("salary", "must be non-negative")
        self.name = self.name.title()


def employee_summary(rows):
    staff = [Employee(*row) for row in rows]
    staff[0].skills.append("python")
    by_dept = defaultdict(list)
    for e in staff:
        by_dept[e.dept].append(e)
    return ({d: sum(e.salary for e in es) for d, es in sorted(by_dept.items())},
            max(staff, key=lambda e: e.salary), dataclasses.asdict(staff[0]),
            staff[1] == Employee(rows[1][0], rows[1][1], rows[1][2]))


@dataclass(frozen=True)
class Point:
    x: float
    y: float

    def __add__(self, other):
        return Point(self.x + other.x, self.y + other.y)

    def __iter__(self):
        yield self.x
        yield self.y


@dataclass(frozen=True)
class Segment:
    start: Point
    end: Point


def point_arithmetic(coords):
    points = [Point(x, y) for x, y in coords]
    total = functools.reduce(operator.add, points)
    x, y = total
    farthest = max(points, key=lambda p: math.hypot(*p))
    return total, (x, y), farthest, sorted(points, key=lambda p: (p.y, p.x)), Point(1, 2) in points


Record = namedtuple("Record", "name score grade", defaults=("?",))


def namedtuple_usage(rows):
    records = [Record(*row) for row in rows]
    best = max(records, key=operator.attrgetter("score"))
    name, score, grade = best
    updated = best._replace(grade="A+")
    return records, best.name, score, grade, updated, updated._asdict(), Record("z", 0)


# --------------------------------------------------------------------------
# Attributes, subscripts, slices, del
# --------------------------------------------------------------------------

def slice_operations(seed):
    xs = list(seed)
    head, tail, every_other, backwards = xs[:3], xs[-3:], xs[::2], xs[::-1]
    middle = xs[2:-2]
    xs[1:3] = ["a", "b", "c"]
    xs[::3] = [None] * len(xs[::3])
    del xs[0]
    del xs[-2:]
    text = "abcdefghij"
    return head, tail, every_other, backwards, middle, xs, text[2:8:2], text[::-2], text[slice(1, 4)]


def subscript_get_set_delete(pairs):
    table = {}
    for k, v in pairs:
        table[k] = v
    table[("tuple", 1)] = "tuple key"
    nested = {"a": {"b": [1, 2, {"c": 3}]}}
    nested["a"]["b"][2]["c"] += 1
    nested["a"]["b"][0] = table[pairs[0][0]]
    del table[pairs[-1][0]]
    matrix = [[1, 2], [3, 4]]
    matrix[1][0], matrix[0][1] = matrix[0][1], matrix[1][0]
    return sorted(table.items(), key=repr), nested, matrix, "xyz"[1], (1, 2, 3)[-1]


def del_statements(values):
    data = list(values)
    mapping = dict(enumerate(values))
    temp = data[0] * 2
    del temp
    try:
        temp  # noqa: B018 - reading a deleted local on purpose
        status = "still bound"
    except UnboundLocalError:
        status = "unbound"
    del data[1], mapping[0]
    del data[-2:]
    a = b = 5
    del a
    assert len(data) >= 1, "need at least one element"
    assert b == 5
    return data, mapping, status


def attribute_read_write():
    class Config:
        retries = 3

    cfg = Config()
    cfg.timeout = 1.5
    cfg.retries = cfg.retries + 2
    cfg.name = "svc"
    setattr(cfg, "verbose", True)
    del cfg.name
    Config.retries = 10
    other = Config()
    return (cfg.retries, other.retries, cfg.timeout, getattr(cfg, "name", "gone"), cfg.verbose,
            sorted(vars(cfg)), hasattr(other, "timeout"))


# --------------------------------------------------------------------------
# Packing and unpacking
# --------------------------------------------------------------------------

def unpacking_variety(seq):
    first, *middle, last = seq
    head, *tail = seq
    *init, end = seq
    (a, b), [c, d] = seq[:2], seq[2:4]
    ((p, q), r) = ((seq[0], seq[1]), seq[2])
    x, y = 1, 2
    x, y = y, x
    i, j, k = "ijk"
    for index, (left, right) in enumerate(zip(seq, seq[1:])):
        if index == 1:
            break
    return first, middle, last, head, tail, init, end, a, b, c, d, p, q, r, x, y, i + j + k, left, right


def literal_splats(xs, extra):
    combined_list = [*xs, *extra, 0]
    combined_tuple = (*xs, "sep", *reversed(extra))
    combined_set = {*xs, *extra}
    base = {"a": 1, "b": 2}
    override = {"b": 20, "c": 30}
    merged = {**base, **override, "d": 4}
    merged_again = {"z": 0, **merged}
    single = 1,
    empty = ()
    return combined_list, combined_tuple, combined_set, merged, merged_again, single, empty, [*"hi"]


def swap_and_rotate(values):
    a, b, c = values
    a, b = b, a
    a, b, c = c, a, b
    pairs = [(i, v) for i, v in enumerate(values)]
    swapped = [(v, i) for i, v in pairs]
    (m, n), o = swapped[:2], swapped[2]
    return a, b, c, swapped, m, n, o


# --------------------------------------------------------------------------
# Comprehensions and generator expressions
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Lambdas, closures, decorators, functools
# --------------------------------------------------------------------------

def closure_counters():
    def make_counter(start=0, step=1):
        count = start

        def increment():
            nonlocal count
            count += step
            return count

        def reset():
            nonlocal count
            count = start

        return increment, reset

    inc, reset = make_counter(10, 5)
    first = [inc() for _ in range(3)]
    reset()
    after_reset = inc()
    other_inc, _ = make_counter()
    return first, after_reset, other_inc(), other_inc()


def closure_nonlocal_read_back(x):
    # The outer frame reads a cell after nested functions assigned it (nonlocal),
    # at two depths, and computes with it.
    total = x

    def bump(k):
        nonlocal total
        total = total + k

    def twice(k):
        def inner():
            nonlocal total
            total *= k
        inner()
        inner()

    bump(3)
    doubled = total * 2
    twice(2)
    return doubled, total - 1, [total + i for i in range(2)]


def closure_late_binding():
    late = [lambda: i for i in range(3)]
    early = [lambda i=i: i * 10 for i in range(3)]
    adders = [(lambda n: lambda x: x + n)(n) for n in range(3)]
    return [f() for f in late], [f() for f in early], [add(100) for add in adders]


def nested_function_scopes(x):
    def outer(y):
        z = x + y

        def middle(w):
            def inner(v):
                return x + y + z + w + v

            return inner(w * 2)

        return middle(z)

    return [outer(i) for i in range(3)]


def compose(*funcs):
    return functools.reduce(lambda f, g: lambda x: g(f(x)), funcs, lambda x: x)


def function_composition(values):
    pipeline = compose(lambda x: x + 1, lambda x: x * 3, str, lambda s: s.rjust(4, "0"))
    identity = compose()
    return [pipeline(v) for v in values], identity(values[0])


def clamp_result(lo, hi):
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return max(lo, min(hi, func(*args, **kwargs)))

        return wrapper

    return decorator


def record_calls(log):
    def decorator(func):
        def wrapper(*args, **kwargs):
            log.append((func.__name__, args, tuple(sorted(kwargs.items()))))
            result = func(*args, **kwargs)
            log.append(("->", result))
            return result

        return wrapper

    return decorator


def memoize(func):
    cache = {}

    @functools.wraps(func)
    def wrapper(*args):
        if args not in cache:
            cache[args] = func(*args)
        return cache[args]

    wrapper.cache = cache
    return wrapper


@clamp_result(0, 100)
def percentage(part, whole):
    return part * 100 // whole


def decorated_functions(pairs):
    log = []

    @record_calls(log)
    def area(w, h=1):
        return w * h

    @memoize
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    areas = [area(w, h=h) for w, h in pairs]
    return [percentage(p, w) for p, w in pairs], areas, log, fib(30), len(fib.cache), percentage.__name__


def partial_application(values):
    def power(base, exp):
        return base ** exp

    square = functools.partial(power, exp=2)
    cube = functools.partial(pow, exp=3)
    parse_binary = functools.partial(int, base=2)
    tagged = functools.partial(_format_call, 1, scale=3)
    return ([square(v) for v in values], cube(3), parse_binary("1011"), tagged(2, 3, mode="x"),
            list(map(functools.partial(operator.mul, 10), values)))


def reduce_variety(values):
    product = functools.reduce(operator.mul, values, 1)
    longest_run = functools.reduce(lambda acc, v: (acc[0] + 1 if v > acc[1] else 1, v), values, (0, -math.inf))
    as_number = functools.reduce(lambda acc, digit: acc * 10 + digit, [d % 10 for d in values])
    merged = functools.reduce(lambda a, b: {**a, **b}, [{"a": 1}, {"b": 2}, {"a": 3}])
    return product, longest_run[0], as_number, merged


def lru_cache_inside(n):
    @functools.lru_cache(maxsize=None)
    def ways(remaining, largest):
        if remaining == 0:
            return 1
        return sum(ways(remaining - k, k) for k in range(1, min(largest, remaining) + 1))

    result = ways(n, n)
    info = ways.cache_info()
    return result, info.hits > 0, info.currsize


# --------------------------------------------------------------------------
# Loops and iteration protocols
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Conditionals, boolean logic, walrus, match
# --------------------------------------------------------------------------

def short_circuit_log():
    log = []

    def check(label, result):
        log.append(label)
        return result

    r1 = check("a", False) and check("b", True)
    r2 = check("c", True) or check("d", True)
    r3 = check("e", 0) or check("f", "") or check("g", "last")
    r4 = check("h", 1) and check("i", [1]) and check("j", None)
    r5 = not check("k", [])
    r6 = check("l", 3) if check("m", False) else check("n", 4)
    return r1, r2, r3, r4, r5, r6, log


def grade_scores(scores):
    grades = []
    for score in scores:
        if score >= 90:
            grades.append("A")
        elif score >= 80:
            grades.append("B")
        elif score >= 70:
            grades.append("C")
        elif score < 0:
            grades.append("?")
        else:
            grades.append("F")
    return grades, "pass" if grades.count("F") < 2 else "fail"


def fizzbuzz(n):
    return ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i)
            for i in range(1, n + 1)]


def walrus_usage(data):
    results = [y for x in data if (y := x * x) % 3 == 1]
    chunks = []
    it = iter(data)
    while chunk := list(itertools.islice(it, 3)):
        chunks.append(chunk)
    if (n := len(data)) > 5:
        size = "large"
    else:
        size = "small"
    return results, chunks, n, size, y


def run_stack_commands(commands):
    stack = []
    for cmd in commands:
        match cmd.split():
            case ["push", value]:
                stack.append(int(value))
            case ["pop"]:
                stack.pop()
            case ["add" | "mul" as op]:
                b, a = stack.pop(), stack.pop()
                stack.append(a + b if op == "add" else a * b)
            case ["dup"]:
                stack.append(stack[-1])
            case ["swap"]:
                stack[-1], stack[-2] = stack[-2], stack[-1]
            case [op, *_] if op.startswith("#"):
                continue
            case _:
                raise ValueError(f"bad command {cmd!r}")
    return stack


def classify_geometry(items):
    out = []
    for item in items:
        match item:
            case Point(x=0, y=0):
                out.append("origin")
            case Point(x=0) | Point(y=0):
                out.append("axis")
            case Point(x=x, y=y) if x == y:
                out.append(f"diagonal {x}")
            case Point():
                out.append("point")
            case Segment(Point(x=x1), Point(x=x2)) if x1 == x2:
                out.append("vertical")
            case Segment(start=start, end=end):
                out.append(f"segment {abs(end.x - start.x) + abs(end.y - start.y)}")
            case (a, b):
                out.append(f"pair {a} {b}")
            case {"kind": "circle", "r": r}:
                out.append(f"circle {r}")
            case str() as s:
                out.append(f"text {s}")
            case _:
                out.append("unknown")
    return out


def process_events(events):
    balance = 0
    log = []
    for event in events:
        match event:
            case {"type": "deposit", "amount": int(amount)} if amount > 0:
                balance += amount
            case {"type": "withdraw", "amount": amount} if amount <= balance:
                balance -= amount
            case {"type": "withdraw"}:
                log.append("insufficient")
            case {"type": "batch", "items": [*items]}:
                for item in items:
                    balance += item
            case {"type": kind, **rest}:
                log.append(f"unknown {kind} {sorted(rest)}")
    return balance, log


def http_status_text(codes):
    def text(code):
        match code:
            case 200 | 201 | 204:
                return "success"
            case 301 | 302:
                return "redirect"
            case 404:
                return "not found"
            case int(c) if 400 <= c < 500:
                return "client error"
            case int(c) if c >= 500:
                return "server error"
            case None:
                return "no status"
            case _:
                return "unknown"

    return [text(c) for c in codes]


def apply_tax(prices):
    global TAX_RATE  # read-only use of a module-level constant
    return [round(p * (1 + TAX_RATE), 2) for p in prices], round(GOLDEN_RATIO, 6)


def describe_values(values):
    out = []
    for v in values:
        if isinstance(v, bool):
            out.append("bool")
        elif isinstance(v, int):
            out.append("int")
        elif isinstance(v, float):
            out.append("float")
        elif isinstance(v, (list, tuple)):
            out.append(f"sequence[{len(v)}]")
        elif isinstance(v, dict):
            out.append("mapping")
        elif isinstance(v, str):
            out.append("str")
        elif v is None:
            out.append("none")
        else:
            out.append(type(v).__name__)
    return out, [issubclass(type(v), (int, float)) for v in values]


# --------------------------------------------------------------------------
# Exceptions and context managers
# --------------------------------------------------------------------------

def try_except_else_finally(inputs):
    log = []
    for raw in inputs:
        try:
            value = int(raw)
        except ValueError as exc:
            log.append(("bad", raw, type(exc).__name__))
        except TypeError:
            log.append(("type", repr(raw)))
        else:
            log.append(("ok", value))
        finally:
            log.append("done")
    return log


def finally_on_return_and_raise():
    events = []

    def inner(flag):
        try:
            if flag:
                raise KeyError(flag)
            return "returned"
        finally:
            events.append(("finally", flag))

    result = inner(None)
    try:
        inner("k")
    except KeyError as exc:
        events.append(("caught", exc.args[0]))
    return result, events


def exception_replaced_in_finally():
    try:
        try:
            {}["missing"]
        finally:
            raise ValueError("from finally")
    except ValueError as exc:
        return type(exc.__context__).__name__, str(exc), exc.__context__.args


def exception_chaining_and_hierarchy(records):
    errors = []
    for rec in records:
        try:
            try:
                age = int(rec["age"])
            except (KeyError, ValueError) as exc:
                raise ValidationError("age", type(exc).__name__) from exc
            if age < 0:
                raise ValidationError("age", "negative")
        except ValidationError as exc:
            errors.append((exc.field_name, str(exc), type(exc.__cause__).__name__))
        except Exception as exc:  # noqa: BLE001 - collect anything else
            errors.append(("other", type(exc).__name__))
    return errors


def nested_exception_handlers(values):
    results = []
    for v in values:
        try:
            try:
                results.append(10 // v)
            except ZeroDivisionError:
                results.append("div0")
                raise
            finally:
                results.append("inner-finally")
        except ZeroDivisionError as exc:
            results.append(type(exc).__name__)
        except TypeError as exc:
            results.append(("type", exc.__class__.__name__))
    return results


def exception_groups(items):
    def validate(item):
        problems = []
        if not isinstance(item.get("id"), int):
            problems.append(TypeError("id"))
        if item.get("qty", 0) < 0:
            problems.append(ValueError("qty"))
        if problems:
            raise ExceptionGroup("invalid item", problems)
        return item["id"]

    report = []
    for item in items:
        try:
            report.append(validate(item))
        except* TypeError as group:
            report.append(("type", len(group.exceptions)))
        except* ValueError as group:
            report.append(("value", [str(e) for e in group.exceptions]))
    return report


class RecordingContext:
    def __init__(self, log, name, suppress=()):
        self.log = log
        self.name = name
        self.suppress = suppress

    def __enter__(self):
        self.log.append(f"enter {self.name}")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(f"exit {self.name} {exc_type.__name__ if exc_type else None}")
        return exc_type is not None and issubclass(exc_type, self.suppress)


@contextlib.contextmanager
def tagged(log, tag):
    log.append(f"<{tag}>")
    try:
        yield tag.upper()
    except KeyError as exc:
        log.append(f"swallowed {exc.args[0]}")
    finally:
        log.append(f"</{tag}>")


def with_statements():
    log = []
    with RecordingContext(log, "outer") as outer, RecordingContext(log, "inner") as inner:
        log.append(f"body {outer.name}/{inner.name}")
    with RecordingContext(log, "suppressing", suppress=(ZeroDivisionError,)):
        log.append("before error")
        _ = 1 / 0
        log.append("never")
    try:
        with RecordingContext(log, "passthrough"):
            raise IndexError("escapes")
    except IndexError:
        log.append("caught outside")
    with tagged(log, "div") as upper:
        log.append(upper)
        with tagged(log, "span"):
            {}["missing-key"]
    with contextlib.suppress(KeyError, ValueError):
        int("not a number")
    with contextlib.ExitStack() as stack:
        for name in ("a", "b"):
            stack.enter_context(RecordingContext(log, name))
        log.append("in exit stack")
    return log


# --------------------------------------------------------------------------
# Recursion
# --------------------------------------------------------------------------

def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


def fibonacci(n):
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def parity_by_mutual_recursion(values):
    return [(v, is_even(v), is_odd(v)) for v in values]


def tree_statistics(tree):
    def depth(node):
        if not isinstance(node, dict):
            return 0
        return 1 + max((depth(child) for child in node.get("children", [])), default=0)

    def total(node):
        return node["value"] + sum(total(child) for child in node.get("children", []))

    def paths(node, prefix=()):
        here = prefix + (node["name"],)
        children = node.get("children", [])
        if not children:
            yield "/".join(here)
        for child in children:
            yield from paths(child, here)

    return depth(tree), total(tree), list(paths(tree))


def hanoi_moves(n, source="A", target="C", spare="B"):
    if n == 0:
        return []
    return (hanoi_moves(n - 1, source, spare, target) + [(source, target)]
            + hanoi_moves(n - 1, spare, target, source))


def permutations_recursive(items):
    if len(items) <= 1:
        return [list(items)]
    result = []
    for i, item in enumerate(items):
        for perm in permutations_recursive(items[:i] + items[i + 1:]):
            result.append([item] + perm)
    return result


def power_set(items):
    if not items:
        return [[]]
    rest = power_set(items[1:])
    return rest + [[items[0]] + subset for subset in rest]


def merge_sort(xs):
    if len(xs) <= 1:
        return list(xs)
    mid = len(xs) // 2
    left, right = merge_sort(xs[:mid]), merge_sort(xs[mid:])
    merged = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged


def quicksort(xs):
    if len(xs) < 2:
        return xs
    pivot, *rest = xs
    return quicksort([x for x in rest if x < pivot]) + [pivot] + quicksort([x for x in rest if x >= pivot])


def binary_search_recursive(xs, target, lo=0, hi=None):
    if hi is None:
        hi = len(xs) - 1
    if lo > hi:
        return -1
    mid = (lo + hi) // 2
    if xs[mid] == target:
        return mid
    if xs[mid] < target:
        return binary_search_recursive(xs, target, mid + 1, hi)
    return binary_search_recursive(xs, target, lo, mid - 1)


def n_queens(n):
    solutions = []

    def place(row, cols, diag1, diag2, board):
        if row == n:
            solutions.append(tuple(board))
            return
        for col in range(n):
            if col in cols or row - col in diag1 or row + col in diag2:
                continue
            place(row + 1, cols | {col}, diag1 | {row - col}, diag2 | {row + col}, board + [col])

    place(0, frozenset(), frozenset(), frozenset(), [])
    return len(solutions), solutions[:2]


def flood_fill_regions(rows):
    grid = [list(row) for row in rows]
    height, width = len(grid), len(grid[0])

    def fill(r, c, ch):
        if not (0 <= r < height and 0 <= c < width) or grid[r][c] != ch:
            return 0
        grid[r][c] = "#"
        return 1 + sum(fill(r + dr, c + dc, ch) for dr, dc in DIRECTIONS)

    sizes = []
    for r in range(height):
        for c in range(width):
            if grid[r][c] not in "#":
                sizes.append((rows[r][c], fill(r, c, grid[r][c])))
    return sorted(sizes), ["".join(row) for row in grid]


def determinant(matrix):
    if len(matrix) == 1:
        return matrix[0][0]
    if len(matrix) == 2:
        (a, b), (c, d) = matrix
        return a * d - b * c
    total = 0
    for col, value in enumerate(matrix[0]):
        minor = [row[:col] + row[col + 1:] for row in matrix[1:]]
        total += (-1) ** col * value * determinant(minor)
    return total


# --------------------------------------------------------------------------
# C functions calling back into Python
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# String formatting and text processing
# --------------------------------------------------------------------------

def format_report(items):
    lines = []
    for name, qty, price in items:
        lines.append(f"{name!r:>10} | {qty:03d} | {price:8.2f} | {qty * price:,.1f} | {name!s:<6}| {name!a}")
    lines.append("%-8s|%5d|%7.3f|%x|%o|%e|%r" % ("total", 42, 3.14159, 255, 8, 12345.678, "q"))
    lines.append("{0:^9}|{1:+d}|{2:.1%}|{name}".format("mid", 7, 0.256, name="kw"))
    width, precision = 10, 3
    lines.append(f"{math.pi:{width}.{precision}f}|{10:b}|{255:#x}|{1234567:_d}|{'x':*^5}|{-3:=+6}")
    lines.append(f"{'nested ' + str(len(items))!r} {items[0][0].upper()=}")
    return lines


def caesar_cipher(text, shift):
    out = []
    for ch in text:
        if ch.isalpha():
            base = ord("A") if ch.isupper() else ord("a")
            out.append(chr((ord(ch) - base + shift) % 26 + base))
        else:
            out.append(ch)
    encoded = "".join(out)
    decoded = encoded.translate(str.maketrans(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "".join(chr((i - shift) % 26 + 97) for i in range(26)) + "".join(chr((i - shift) % 26 + 65) for i in range(26)),
    ))
    return encoded, decoded


def to_roman(number):
    parts = []
    for value, numeral in ROMAN_TABLE:
        count, number = divmod(number, value)
        parts.append(numeral * count)
    return "".join(parts)


def from_roman(text):
    values = {numeral: value for value, numeral in ROMAN_TABLE if len(numeral) == 1}
    total = 0
    for current, following in zip(text, text[1:] + " "):
        v = values[current]
        total += -v if following != " " and values[following] > v else v
    return total


def roman_round_trip(numbers):
    return [(n, to_roman(n), from_roman(to_roman(n))) for n in numbers]


def run_length_encode(text):
    encoded = "".join(f"{len(list(group))}{ch}" for ch, group in itertools.groupby(text))
    decoded = "".join(ch * int(count) for count, ch in re.findall(r"(\d+)(\D)", encoded))
    return encoded, decoded == text


def camel_to_snake(names):
    out = []
    for name in names:
        chars = []
        for i, ch in enumerate(name):
            if ch.isupper() and i and not name[i - 1].isupper():
                chars.append("_")
            chars.append(ch.lower())
        out.append("".join(chars))
    return out


def word_wrap(text, width):
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


def anagram_groups(words):
    groups = defaultdict(list)
    for word in words:
        groups["".join(sorted(word))].append(word)
    return sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: (len(g), g))


def balanced_brackets(texts):
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(text):
        stack = []
        for ch in text:
            if ch in "([{":
                stack.append(ch)
            elif ch in pairs:
                if not stack or stack.pop() != pairs[ch]:
                    return False
        return not stack

    return [check(t) for t in texts]


def is_palindrome_sentences(sentences):
    cleaned = ["".join(ch.lower() for ch in s if ch.isalnum()) for s in sentences]
    return [c == c[::-1] for c in cleaned]


def vowel_statistics(text):
    counter = Counter(ch for ch in text.lower() if ch in VOWELS)
    return counter.most_common(3), sum(counter.values()), dict(sorted(counter.items()))


# --------------------------------------------------------------------------
# Data munging and classic algorithms
# --------------------------------------------------------------------------

def group_and_aggregate(rows):
    groups = defaultdict(lambda: {"count": 0, "total": 0, "names": []})
    for name, team, points in rows:
        g = groups[team]
        g["count"] += 1
        g["total"] += points
        g["names"].append(name)
    return {team: {**g, "avg": round(g["total"] / g["count"], 3)} for team, g in sorted(groups.items())}


def join_tables(users, orders):
    by_id = {u["id"]: u for u in users}
    joined = []
    for order in orders:
        user = by_id.get(order["user_id"])
        if user is None:
            continue
        joined.append({"user": user["name"], "item": order["item"], "total": order["qty"] * order["price"]})
    totals = Counter()
    for row in joined:
        totals[row["user"]] += row["total"]
    return joined, sorted(totals.items())


def pivot_table(records):
    rows = sorted({r for r, _, _ in records})
    cols = sorted({c for _, c, _ in records})
    table = {r: dict.fromkeys(cols, 0) for r in rows}
    for r, c, v in records:
        table[r][c] += v
    return [[r] + [table[r][c] for c in cols] for r in rows], cols


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        curr = [i]
        for j, cb in enumerate(b, 1):
            curr.append(min(prev[j] + 1, curr[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = curr
    return prev[-1]


def longest_common_subsequence(a, b):
    table = [[""] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            if a[i] == b[j]:
                table[i][j] = a[i] + table[i + 1][j + 1]
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1], key=len)
    return table[0][0]


def knapsack(items, capacity):
    best = [0] * (capacity + 1)
    choice = [[] for _ in range(capacity + 1)]
    for name, weight, value in items:
        for cap in range(capacity, weight - 1, -1):
            candidate = best[cap - weight] + value
            if candidate > best[cap]:
                best[cap] = candidate
                choice[cap] = choice[cap - weight] + [name]
    return best[capacity], choice[capacity]


def coin_change_ways(amount, coins):
    ways = [1] + [0] * amount
    for coin in coins:
        for value in range(coin, amount + 1):
            ways[value] += ways[value - coin]
    return ways[amount]


def dijkstra(edges, source):
    graph = defaultdict(list)
    for u, v, w in edges:
        graph[u].append((v, w))
        graph[v].append((u, w))
    dist = {source: 0}
    heap = [(0, source)]
    visited = set()
    while heap:
        d, node = heapq.heappop(heap)
        if node in visited:
            continue
        visited.add(node)
        for nxt, w in graph[node]:
            nd = d + w
            if nd < dist.get(nxt, math.inf):
                dist[nxt] = nd
                heapq.heappush(heap, (nd, nxt))
    return dict(sorted(dist.items()))


def topological_sort(dependencies):
    indegree = {node: 0 for node in dependencies}
    children = defaultdict(list)
    for node, deps in dependencies.items():
        for dep in deps:
            indegree.setdefault(dep, 0)
            indegree[node] += 1
            children[dep].append(node)
    queue = deque(sorted(n for n, d in indegree.items() if d == 0))
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for child in sorted(children[node]):
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    return order, len(order) == len(indegree)


class UnionFind:
    def __init__(self, n):
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x):
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


def connected_components(n, edges):
    uf = UnionFind(n)
    merged = [uf.union(a, b) for a, b in edges]
    groups = defaultdict(list)
    for node in range(n):
        groups[uf.find(node)].append(node)
    return merged, sorted(groups.values())


class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key):
        if key in self.data:
            self.data.move_to_end(key)
            self.hits += 1
            return self.data[key]
        self.misses += 1
        return None

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.capacity:
            self.data.popitem(last=False)


def lru_cache_simulation(accesses, capacity):
    cache = LRUCache(capacity)
    for key in accesses:
        if cache.get(key) is None:
            cache.put(key, key.upper())
    return cache.hits, cache.misses, list(cache.data.items())


def game_of_life(live_cells, generations):
    live = set(map(tuple, live_cells))
    for _ in range(generations):
        counts = Counter((x + dx, y + dy) for x, y in live for dx in (-1, 0, 1) for dy in (-1, 0, 1)
                         if dx or dy)
        live = {cell for cell, n in counts.items() if n == 3 or (n == 2 and cell in live)}
    return sorted(live)


def spiral_order(matrix):
    rows = [list(r) for r in matrix]
    out = []
    while rows:
        out.extend(rows.pop(0))
        rows = [list(r) for r in zip(*rows)][::-1]
    return out


def mandelbrot_rows(width, height, max_iter):
    rows = []
    for j in range(height):
        row = []
        for i in range(width):
            c = complex(-2 + 2.6 * i / width, -1.2 + 2.4 * j / height)
            z = 0j
            n = 0
            while abs(z) <= 2 and n < max_iter:
                z = z * z + c
                n += 1
            row.append(" .:-=+*#%@"[n * 9 // max_iter])
        rows.append("".join(row))
    return rows


def bank_ledger(transactions):
    accounts = {}
    rejected = []
    for who, amount in transactions:
        balance = accounts.get(who, 0)
        if balance + amount < 0:
            rejected.append((who, amount))
            continue
        accounts[who] = balance + amount
    return accounts, rejected, sum(accounts.values())


def deque_rotation(values, steps):
    d = deque(values, maxlen=len(values) + 1)
    d.rotate(steps)
    d.appendleft(-1)
    d.append(99)
    popped = d.pop(), d.popleft()
    return list(d), popped, d.maxlen


# --------------------------------------------------------------------------
# Tiny interpreters and state machines
# --------------------------------------------------------------------------

def evaluate_rpn(expression):
    stack = []
    ops = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "^": lambda a, b: a ** b}
    for token in expression.split():
        if token in ops:
            b = stack.pop()
            a = stack.pop()
            stack.append(ops[token](a, b))
        else:
            stack.append(float(token) if "." in token else int(token))
    return stack.pop() if len(stack) == 1 else stack


class ExpressionParser:
    """Recursive-descent parser for + - * / and parentheses."""

    TOKEN = re.compile(r"\s*(?:(\d+\.?\d*)|(.))")

    def __init__(self, text):
        self.tokens = [num or op for num, op in self.TOKEN.findall(text)]
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected=None):
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ParseError(f"expected {expected or 'token'} at {self.pos}, got {token!r}")
        self.pos += 1
        return token

    def parse(self):
        value = self.expr()
        if self.peek() is not None:
            raise ParseError(f"trailing {self.peek()!r}")
        return value

    def expr(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            if self.take() == "+":
                value += self.term()
            else:
                value -= self.term()
        return value

    def term(self):
        value = self.factor()
        while self.peek() in ("*", "/"):
            if self.take() == "*":
                value *= self.factor()
            else:
                value /= self.factor()
        return value

    def factor(self):
        token = self.peek()
        if token == "-":
            self.take()
            return -self.factor()
        if token == "(":
            self.take("(")
            value = self.expr()
            self.take(")")
            return value
        token = self.take()
        if not token[0].isdigit():
            raise ParseError(f"unexpected {token!r}")
        return float(token) if "." in token else int(token)


def parse_arithmetic(text):
    return ExpressionParser(text).parse()


def evaluate_lisp(expr, env=None):
    env = {} if env is None else env
    if isinstance(expr, (int, float)):
        return expr
    if isinstance(expr, str):
        return env[expr]
    op, *args = expr
    match op:
        case "let":
            name, value, body = args
            return evaluate_lisp(body, {**env, name: evaluate_lisp(value, env)})
        case "if":
            cond, then, other = args
            return evaluate_lisp(then if evaluate_lisp(cond, env) else other, env)
        case "lambda":
            params, body = args
            return lambda *vals: evaluate_lisp(body, {**env, **dict(zip(params, vals))})
        case "+" | "*" | "-" | "<":
            vals = [evaluate_lisp(a, env) for a in args]
            if op == "+":
                return sum(vals)
            if op == "*":
                return math.prod(vals)
            if op == "-":
                return vals[0] - sum(vals[1:])
            return vals[0] < vals[1]
        case _:
            fn = evaluate_lisp(op, env)
            return fn(*[evaluate_lisp(a, env) for a in args])


def run_brainfuck(program, input_bytes=()):
    tape = [0] * 32
    ptr = pc = 0
    out = []
    inp = list(input_bytes)
    jumps = {}
    stack = []
    for i, ch in enumerate(program):
        if ch == "[":
            stack.append(i)
        elif ch == "]":
            j = stack.pop()
            jumps[i], jumps[j] = j, i
    while pc < len(program):
        ch = program[pc]
        if ch == ">":
            ptr += 1
        elif ch == "<":
            ptr -= 1
        elif ch == "+":
            tape[ptr] = (tape[ptr] + 1) % 256
        elif ch == "-":
            tape[ptr] = (tape[ptr] - 1) % 256
        elif ch == ".":
            out.append(tape[ptr])
        elif ch == ",":
            tape[ptr] = inp.pop(0) if inp else 0
        elif ch == "[" and tape[ptr] == 0:
            pc = jumps[pc]
        elif ch == "]" and tape[ptr] != 0:
            pc = jumps[pc]
        pc += 1
    return out


def register_machine(program):
    """Execute a list of (opcode, operands...) tuples on a small register file."""
    regs = dict.fromkeys("abcd", 0)
    pc = 0
    executed = 0
    while 0 <= pc < len(program) and executed < 1000:
        op, *operands = program[pc]
        executed += 1
        match op, operands:
            case "set", [reg, value]:
                regs[reg] = regs.get(value, value) if isinstance(value, str) else value
            case "add", [reg, value]:
                regs[reg] += regs[value] if isinstance(value, str) else value
            case "mul", [reg, value]:
                regs[reg] *= regs[value] if isinstance(value, str) else value
            case "jnz", [reg, offset] if regs[reg] != 0:
                pc += offset
                continue
            case "jnz", _:
                pass
            case _:
                raise ValueError(op)
        pc += 1
    return regs, executed


def divisible_by_three_dfa(bit_strings):
    transitions = {(0, "0"): 0, (0, "1"): 1, (1, "0"): 2, (1, "1"): 0, (2, "0"): 1, (2, "1"): 2}
    results = []
    for bits in bit_strings:
        state = 0
        for bit in bits:
            state = transitions[(state, bit)]
        results.append((bits, state == 0, int(bits, 2) % 3 == 0))
    return results


class Turnstile:
    def __init__(self):
        self.state = "locked"
        self.coins = 0
        self.passes = 0
        self.alarms = 0

    def handle(self, event):
        match (self.state, event):
            case ("locked", "coin"):
                self.state = "unlocked"
                self.coins += 1
            case ("locked", "push"):
                self.alarms += 1
            case ("unlocked", "push"):
                self.state = "locked"
                self.passes += 1
            case ("unlocked", "coin"):
                self.coins += 1
        return self.state


def turnstile_state_machine(events):
    machine = Turnstile()
    states = [machine.handle(e) for e in events]
    return states, machine.coins, machine.passes, machine.alarms


def csv_line_parser(lines):
    rows = []
    for line in lines:
        fields, current, state = [], [], "start"
        for ch in line:
            if state in ("start", "plain"):
                if ch == '"' and state == "start":
                    state = "quoted"
                elif ch == ",":
                    fields.append("".join(current))
                    current, state = [], "start"
                else:
                    current.append(ch)
                    state = "plain"
            elif state == "quoted":
                if ch == '"':
                    state = "quote_in_quoted"
                else:
                    current.append(ch)
            elif state == "quote_in_quoted":
                if ch == '"':
                    current.append('"')
                    state = "quoted"
                elif ch == ",":
                    fields.append("".join(current))
                    current, state = [], "start"
        fields.append("".join(current))
        rows.append(fields)
    return rows


def vending_machine(events):
    prices = {"cola": 150, "chips": 100}
    credit = 0
    dispensed = []
    for event in events:
        kind, _, arg = event.partition(":")
        if kind == "coin":
            credit += int(arg)
        elif kind == "select":
            price = prices.get(arg)
            if price is None:
                dispensed.append(f"unknown {arg}")
            elif credit >= price:
                credit -= price
                dispensed.append(arg)
            else:
                dispensed.append(f"need {price - credit}")
        elif kind == "refund":
            dispensed.append(f"refund {credit}")
            credit = 0
    return dispensed, credit


# --------------------------------------------------------------------------
# math and seeded random
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Functions that raise
# --------------------------------------------------------------------------

def average_of_groups(groups):
    def mean(values):
        return sum(values) / len(values)

    return {name: mean(values) for name, values in groups.items()}


def resolve_config_path(config, path):
    def step(node, key):
        return node[key]

    node = config
    for key in path.split("."):
        node = step(node, key)
    return node


def withdraw_from_account(balance, amounts):
    class Account:
        def __init__(self, balance):
            self.balance = balance

        def withdraw(self, amount):
            if amount > self.balance:
                raise ValueError(f"insufficient funds: {amount} > {self.balance}")
            self.balance -= amount
            return self.balance

    account = Account(balance)
    return [account.withdraw(a) for a in amounts]


def parse_ints_reraising(texts):
    parsed = []
    for text in texts:
        try:
            parsed.append(int(text))
        except ValueError:
            parsed.append(None)
            if not text.strip():
                continue
            raise
    return parsed


def lookup_with_translation(table, key):
    try:
        return table[key]
    except KeyError as exc:
        raise ConfigError(f"no entry for {key!r}") from exc


def sort_mixed_keys(records):
    return sorted(records, key=lambda r: r.get("rank", "unranked"))


def generator_leaking_stop_iteration(iterables):
    def first_items(its):
        for it in its:
            yield next(iter(it))

    return list(first_items(iterables))


def attribute_error_through_context(name):
    log = []
    with RecordingContext(log, "outer"):
        with RecordingContext(log, "inner", suppress=(KeyError,)):
            return getattr(Tally(), name)


def overflow_while_handling(values):
    results = []
    for v in values:
        try:
            results.append(1 / v)
        except ZeroDivisionError:
            results.append(math.exp(v * 1000 + 1000))
    return results


def validate_sort_key(items):
    def key(item):
        if item < 0:
            raise ValidationError("item", f"negative value {item}")
        return -item

    return sorted(items, key=key)


# --------------------------------------------------------------------------
# Functions that mutate their arguments (used with make_args)
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# numpy
# --------------------------------------------------------------------------

def numpy_statistics(values):
    arr = np.array(values, dtype=float)
    return {
        "mean": float(arr.mean()), "std": float(arr.std()), "cumsum": np.cumsum(arr).tolist(),
        "argmax": int(arr.argmax()), "clipped": np.clip(arr, 2, 5).tolist(),
        "normalized": ((arr - arr.min()) / (arr.max() - arr.min())).round(6).tolist(),
    }


def numpy_matrix_ops(n):
    a = np.arange(n * n).reshape(n, n)
    b = np.eye(n, dtype=int) * 2
    return {
        "product": (a @ b).tolist(), "transpose": a.T.tolist(), "trace": int(np.trace(a)),
        "row_sums": a.sum(axis=1).tolist(), "even": a[a % 2 == 0].tolist(), "diag": np.diag(a).tolist(),
    }


def numpy_linear_solve(coefficients, rhs):
    a = np.array(coefficients, dtype=float)
    b = np.array(rhs, dtype=float)
    x = np.linalg.solve(a, b)
    return np.round(x, 9).tolist(), round(float(np.linalg.det(a)), 9), bool(np.allclose(a @ x, b))


def numpy_python_callbacks(values):
    arr = np.array(values)
    collatz = np.vectorize(collatz_steps)(arr)
    rows = np.arange(12).reshape(3, 4)
    row_ranges = np.apply_along_axis(lambda r: int(r.max() - r.min()) + len(r), 1, rows)
    return collatz.tolist(), row_ranges.tolist(), np.polyval([1, -2, 1], arr).tolist()


def numpy_broadcast_and_index():
    grid = np.arange(5)[:, None] * np.arange(4)[None, :]
    grid[1:3, ::2] += 100
    mask = grid > 6
    picked = grid[[0, 2, 4], [1, 2, 3]]
    return grid.tolist(), int(mask.sum()), picked.tolist(), np.where(mask, 1, 0).sum(axis=0).tolist()


# --------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------

_TREE = {
    "name": "root", "value": 1, "children": [
        {"name": "a", "value": 2, "children": [{"name": "a1", "value": 3}, {"name": "a2", "value": 4}]},
        {"name": "b", "value": 5, "children": [{"name": "b1", "value": 6, "children": [{"name": "deep", "value": 7}]}]},
        {"name": "c", "value": 8},
    ],
}

_GRAPH = (("a", "b", 4), ("a", "c", 1), ("c", "b", 2), ("b", "d", 5), ("c", "d", 8), ("d", "e", 3))

_LISP_PROGRAM = (
    "let", "square", ("lambda", ("x",), ("*", "x", "x")),
    ("let", "n", 7,
     ("if", ("<", "n", 10),
      ("+", ("square", "n"), ("square", 3), ("-", 10, 4)),
      0)),
)

_REGISTER_PROGRAM = (
    ("set", "a", 1), ("set", "b", 6),
    ("mul", "a", "b"), ("add", "b", -1), ("jnz", "b", -2),
    ("set", "c", "a"), ("add", "c", 1),
)

CASES = [
    # arithmetic, bitwise, unary
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
    # comparisons, identity, membership
    Case("classify_triangle_right", classify_triangle, (5, 3, 4)),
    Case("classify_triangle_equilateral", classify_triangle, (2, 2, 2)),
    Case("classify_triangle_isosceles", classify_triangle, (5, 5, 8)),
    Case("classify_triangle_degenerate", classify_triangle, (1, 2, 3)),
    Case("classify_triangle_invalid", classify_triangle, (0, 2, 3)),
    Case("classify_triangle_scalene", classify_triangle, (4, 6, 7)),
    Case("chained_comparisons", chained_comparisons, ([3, 8, 1, 9, 4, 3], 2, 9)),
    Case("membership_and_identity", membership_and_identity, ([1, None, "a", 3.5, None], "a")),
    # augmented assignment
    Case("augmented_operators", augmented_operators, (13,)),
    Case("running_statistics", running_statistics, ([4.0, 8.5, -1.25, 3.0, 10.0],)),
    Case("letter_histogram", letter_histogram, ("The quick brown fox jumps over the lazy dog!",)),
    Case("item_augmented_assignment", item_augmented_assignment, (3, 4)),
    Case("attribute_augmented_assignment", attribute_augmented_assignment, ([3, 1, 4, 1, 5],)),
    # calling conventions
    Case("call_conventions", call_conventions),
    Case("weighted_total", weighted_total, (1, 2, 3), {"weight": 2.0, "bonus": 5, "penalty": -1}),
    Case("weighted_total_defaults", weighted_total, (4.5, 0.5)),
    Case("forward_everything", forward_everything, (1, 2, 3), {"flag": True, "mode": "fast"}),
    # builtin methods
    Case("word_frequencies", word_frequencies,
         ("It was the best of times, it was the worst of times; it was the age of wisdom.",)),
    Case("list_method_tour", list_method_tour, ((5, 3, 8, 3),)),
    Case("dict_method_tour", dict_method_tour, ((("a", 1), ("b", 2), ("c", 3)),)),
    Case("set_operations", set_operations, ([1, 2, 3, 4, -1], [3, 4, 5])),
    Case("string_method_tour", string_method_tour, ("The rain in Spain stays 42 on the plain log",)),
    Case("parse_key_value_config", parse_key_value_config,
         ("# settings\nName = demo\nRetries=3\n\nverbose = TRUE  # inline\npath=/tmp/x\n",)),
    Case("bytes_checksum", bytes_checksum, ("héllo wörld",)),
    # user classes
    Case("shape_report", shape_report, ((("rect", 3, 4), ("square", 5), ("circle", 1.5), ("parse", "2x7")),)),
    Case("vector_algebra", vector_algebra, ((1, 2, 3), (4, -5, 6))),
    Case("polynomial_algebra", polynomial_algebra, ((1, 2, 3), (0, -1, 0, 2), (-2, 0, 1, 3))),
    Case("money_operations", money_operations, ([1250, 399, 10001, 399, 5],)),
    Case("inventory_operations", inventory_operations,
         ((("widget", 3), ("gadget", 2), ("gizmo", 0), ("widget", 4), ("doohickey", 1)),)),
    Case("legacy_getitem_iteration", legacy_getitem_iteration, (6,)),
    Case("dynamic_attribute_access", dynamic_attribute_access, ({"base": 21, "temp": "x", "label": "ok"},)),
    Case("inheritance_and_mro", inheritance_and_mro),
    Case("callable_objects", callable_objects, ([5, -2, 10, 7],)),
    Case("version_sorting", version_sorting, (("1.2.10", "1.10.0", "0.9.9", "1.2.9", "2.0.0"),)),
    Case("employee_summary", employee_summary,
         ((("ada lovelace", "eng", 120), ("alan turing", "eng", 110), ("grace hopper", "ops", 130)),)),
    Case("point_arithmetic", point_arithmetic, (((1, 2), (3, -1), (-4, 5), (0, 0)),)),
    Case("namedtuple_usage", namedtuple_usage, ((("ann", 81, "B"), ("bob", 93, "A"), ("cy", 70)),)),
    # attributes, subscripts, slices, del
    Case("slice_operations", slice_operations, (range(10),)),
    Case("subscript_get_set_delete", subscript_get_set_delete, ((("x", 1), ("y", 2), ("z", 3)),)),
    Case("del_statements", del_statements, ((10, 20, 30, 40, 50, 60),)),
    Case("attribute_read_write", attribute_read_write),
    # unpacking
    Case("unpacking_variety", unpacking_variety, ((1, 2, 3, 4, 5, 6),)),
    Case("literal_splats", literal_splats, ((1, 2, 3), [3, 4])),
    Case("swap_and_rotate", swap_and_rotate, (("x", "y", "z"),)),
    # comprehensions and generator expressions
    Case("comprehension_variety", comprehension_variety, (10,)),
    Case("generator_expression_consumers", generator_expression_consumers, ((3, -7, 12, 25, 9, 30),)),
    Case("matrix_transpose_and_multiply", matrix_transpose_and_multiply,
         (((1, 2, 3), (4, 5, 6)), ((7, 8), (9, 10), (11, 12)))),
    Case("sieve_of_eratosthenes", sieve_of_eratosthenes, (120,)),
    Case("pythagorean_triples", pythagorean_triples, (21,)),
    Case("pascal_triangle", pascal_triangle, (8,)),
    # lambdas, closures, decorators, functools
    Case("closure_counters", closure_counters),
    Case("closure_late_binding", closure_late_binding),
    Case("closure_nonlocal_read_back", closure_nonlocal_read_back, (5,)),
    Case("nested_function_scopes", nested_function_scopes, (4,)),
    Case("function_composition", function_composition, ([1, 7, 33],)),
    Case("decorated_functions", decorated_functions, (((3, 4), (50, 20), (1, 200)),)),
    Case("partial_application", partial_application, ([1, 2, 3, 4],)),
    Case("reduce_variety", reduce_variety, ([3, 5, 2, 8, 9, 1],)),
    Case("lru_cache_inside", lru_cache_inside, (15,)),
    # loops and iteration
    Case("loop_shapes", loop_shapes, ({"b": 2, "a": 1}, "education", [3, 1, 4], [1, 5, 9, 2])),
    Case("first_prime_above", first_prime_above, (89,)),
    Case("find_with_while_else_hit", find_with_while_else, ([4, 8, 15, 16, 23, 42], 16)),
    Case("find_with_while_else_miss", find_with_while_else, ([4, 8, 15], 99)),
    Case("continue_and_break", continue_and_break, ([3, -1, 8, 7, -5, 120, 4],)),
    Case("user_iterators", user_iterators, (5,)),
    Case("generator_pipelines", generator_pipelines, ([1, [2, 3, (4, [5, 6])], 7, [[8]]], "alpha\nbeta\ngamma")),
    Case("generator_send_throw_close", generator_send_throw_close, ([10, 20, 60],)),
    Case("itertools_usage", itertools_usage, ([5, 12, 17, 23, 31, 38, 4],)),
    # conditionals, walrus, match, globals, isinstance
    Case("short_circuit_log", short_circuit_log),
    Case("grade_scores", grade_scores, ([95, 83, 71, 40, -5, 12],)),
    Case("fizzbuzz", fizzbuzz, (20,)),
    Case("walrus_usage", walrus_usage, ([1, 2, 4, 5, 7, 9, 10],)),
    Case("run_stack_commands", run_stack_commands,
         (("push 3", "push 4", "add", "dup", "# comment here", "push 5", "swap", "mul", "push 2", "pop"),)),
    Case("classify_geometry", classify_geometry,
         ((Point(0, 0), Point(0, 3), Point(2, 2), Point(1, 5), Segment(Point(1, 1), Point(1, 4)),
           Segment(Point(0, 0), Point(3, 4)), (7, 8), {"kind": "circle", "r": 2}, "text", 42),)),
    Case("process_events", process_events,
         (({"type": "deposit", "amount": 100}, {"type": "deposit", "amount": -5},
           {"type": "withdraw", "amount": 30}, {"type": "withdraw", "amount": 500},
           {"type": "batch", "items": [1, 2, 3]}, {"type": "audit", "who": "x", "when": 1}),)),
    Case("http_status_text", http_status_text, ((200, 204, 302, 404, 418, 503, None, 99),)),
    Case("apply_tax", apply_tax, ([10, 19.99, 0.5],)),
    Case("describe_values", describe_values, ((True, 3, 2.5, [1], (1, 2), {"a": 1}, "s", None, Version(1)),)),
    # exceptions and context managers
    Case("try_except_else_finally", try_except_else_finally, (("12", "x", None, "-4", 3.7),)),
    Case("finally_on_return_and_raise", finally_on_return_and_raise),
    Case("exception_replaced_in_finally", exception_replaced_in_finally),
    Case("exception_chaining_and_hierarchy", exception_chaining_and_hierarchy,
         (({"age": "31"}, {"age": "abc"}, {}, {"age": -3}, {"age": None}),)),
    Case("nested_exception_handlers", nested_exception_handlers, ((5, 0, "x", -3),)),
    Case("exception_groups", exception_groups,
         (({"id": 1, "qty": 2}, {"id": "x"}, {"id": 2, "qty": -1}, {"id": None, "qty": -5}),)),
    Case("with_statements", with_statements),
    # recursion
    Case("factorial", factorial, (12,)),
    Case("fibonacci", fibonacci, (15,)),
    Case("ackermann", ackermann, (2, 3)),
    Case("parity_by_mutual_recursion", parity_by_mutual_recursion, ((0, 7, 10, 25),)),
    Case("tree_statistics", tree_statistics, (_TREE,)),
    Case("hanoi_moves", hanoi_moves, (4,)),
    Case("hanoi_moves_kw", hanoi_moves, (2,), {"source": "L", "target": "R", "spare": "M"}),
    Case("permutations_recursive", permutations_recursive, ("abcd",)),
    Case("power_set", power_set, ([1, 2, 3, 4],)),
    Case("merge_sort", merge_sort, ([38, 27, 43, 3, 9, 82, 10, 3],)),
    Case("quicksort", quicksort, ([5, 1, 9, 3, 7, 3, 8, 2, 6],)),
    Case("binary_search_recursive", binary_search_recursive, ([1, 3, 5, 7, 9, 11, 13, 15], 11)),
    Case("binary_search_recursive_miss", binary_search_recursive, ([1, 3, 5, 7], 4)),
    Case("n_queens", n_queens, (6,)),
    Case("flood_fill_regions", flood_fill_regions, (("aab.", "abb.", "..cc", "d.cc"),)),
    Case("determinant", determinant, (((2, -3, 1, 5), (2, 0, -1, 3), (1, 4, 5, -2), (0, 1, 2, 3)),)),
    # C functions calling back into Python
    Case("sort_with_keys", sort_with_keys, (("banana", "Apple", "fig", "cherry", "date", "kiwi"),)),
    Case("sort_with_dunder_lt", sort_with_dunder_lt, (((3, "write"), (1, "plan"), (2, "code"), (1, "alpha")),)),
    Case("dict_sorted_by_value", dict_sorted_by_value, ({"ann": 7, "bob": 12, "cy": 7, "dee": 4, "eve": 9},)),
    # strings and formatting
    Case("format_report", format_report, ((("apple", 3, 1.25), ("kiwi", 12, 0.4), ("durian", 1, 15.0)),)),
    Case("caesar_cipher", caesar_cipher, ("Hello, World! xyz", 3)),
    Case("roman_round_trip", roman_round_trip, ((1, 4, 9, 14, 40, 90, 400, 1994, 2024, 3999),)),
    Case("run_length_encode", run_length_encode, ("WWWWBBBWWCCCCCCD",)),
    Case("camel_to_snake", camel_to_snake, (("camelCase", "HTTPServer", "simple", "getHTTPResponseCode"),)),
    Case("word_wrap", word_wrap, ("the quick brown fox jumps over the lazy dog and keeps running far", 16)),
    Case("anagram_groups", anagram_groups, (("listen", "silent", "enlist", "google", "gooegl", "cat", "act", "x"),)),
    Case("balanced_brackets", balanced_brackets, (("([]{})", "([)]", "((", "", "{[()()]}", "}"),)),
    Case("is_palindrome_sentences", is_palindrome_sentences,
         (("A man, a plan, a canal: Panama", "Not one", "Was it a car or a cat I saw?"),)),
    Case("vowel_statistics", vowel_statistics, ("Programming in Python is rather enjoyable",)),
    # data munging and algorithms
    Case("group_and_aggregate", group_and_aggregate,
         ((("ann", "red", 10), ("bob", "blue", 7), ("cy", "red", 4), ("dee", "blue", 12), ("eve", "green", 1)),)),
    Case("join_tables", join_tables,
         (({"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}),
          ({"user_id": 1, "item": "pen", "qty": 3, "price": 2}, {"user_id": 3, "item": "ink", "qty": 1, "price": 9},
           {"user_id": 2, "item": "pad", "qty": 2, "price": 5}, {"user_id": 1, "item": "cap", "qty": 1, "price": 4}))),
    Case("pivot_table", pivot_table, ((("q1", "east", 5), ("q1", "west", 3), ("q2", "east", 4), ("q1", "east", 2)),)),
    Case("levenshtein", levenshtein, ("kitten", "sitting")),
    Case("longest_common_subsequence", longest_common_subsequence, ("AGGTAB", "GXTXAYB")),
    Case("knapsack", knapsack, ((("map", 9, 150), ("compass", 13, 35), ("water", 15, 200), ("sandwich", 5, 160),
                                 ("glucose", 4, 60), ("tin", 7, 45)), 30)),
    Case("coin_change_ways", coin_change_ways, (100, (1, 5, 10, 25))),
    Case("dijkstra", dijkstra, (_GRAPH, "a")),
    Case("topological_sort", topological_sort,
         ({"app": ["lib", "utils"], "lib": ["core"], "utils": ["core"], "tests": ["app"], "core": []},)),
    Case("connected_components", connected_components, (8, ((0, 1), (2, 3), (1, 2), (5, 6), (3, 0), (7, 7)))),
    Case("lru_cache_simulation", lru_cache_simulation, (("a", "b", "a", "c", "d", "b", "a", "e", "a"), 3)),
    Case("game_of_life", game_of_life, (((1, 0), (2, 1), (0, 2), (1, 2), (2, 2)), 4)),
    Case("spiral_order", spiral_order, (((1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12)),)),
    Case("mandelbrot_rows", mandelbrot_rows, (12, 6, 18)),
    Case("bank_ledger", bank_ledger, ((("ann", 50), ("bob", -10), ("ann", -20), ("bob", 30), ("ann", -40)),)),
    Case("deque_rotation", deque_rotation, ((1, 2, 3, 4, 5), 2)),
    # tiny interpreters and state machines
    Case("evaluate_rpn", evaluate_rpn, ("3 4 + 2 * 7 - 2 ^",)),
    Case("evaluate_rpn_float", evaluate_rpn, ("1.5 2 * 4 /",)),
    Case("parse_arithmetic", parse_arithmetic, ("2 * (3 + 4) - 10 / 4 + -(1 - 3)",)),
    Case("parse_arithmetic_nested", parse_arithmetic, ("((1+2)*(3+4))*((5))",)),
    Case("evaluate_lisp", evaluate_lisp, (_LISP_PROGRAM,)),
    Case("run_brainfuck_add", run_brainfuck, (",>,[<+>-]<.", (3, 4))),
    Case("run_brainfuck_multiply", run_brainfuck, ("++++++++[>++++++++<-]>+.+.",)),
    Case("register_machine", register_machine, (_REGISTER_PROGRAM,)),
    Case("divisible_by_three_dfa", divisible_by_three_dfa, (("0", "11", "110", "111", "1001", "10010"),)),
    Case("turnstile_state_machine", turnstile_state_machine, (("push", "coin", "coin", "push", "push", "coin"),)),
    Case("csv_line_parser", csv_line_parser, (('a,b,c', '"x, y",2,"say ""hi"""', ',,end'),)),
    Case("vending_machine", vending_machine,
         (("coin:100", "select:cola", "coin:100", "select:cola", "select:tea", "coin:25", "refund"),)),
    # math and random
    Case("math_functions", math_functions, (2.75,)),
    Case("numeric_integration", numeric_integration, (40,)),
    Case("seeded_random_walk", seeded_random_walk, (25,)),
    Case("monte_carlo_pi", monte_carlo_pi, (500,)),
    Case("seeded_random_structures", seeded_random_structures),
    # raising cases
    Case("raises_zero_division_nested", average_of_groups, ({"a": [1, 2, 3], "b": []},), raises=ZeroDivisionError),
    Case("raises_key_error_nested", resolve_config_path, ({"db": {"host": "x"}}, "db.port"), raises=KeyError),
    Case("raises_value_error_explicit", withdraw_from_account, (100, (30, 50, 40)), raises=ValueError),
    Case("raises_value_error_reraised", parse_ints_reraising, (("1", " ", "2", "three"),), raises=ValueError),
    Case("raises_chained_custom_error", lookup_with_translation, ({"a": 1}, "b"), raises=ConfigError),
    Case("raises_type_error_from_c_compare", sort_mixed_keys, (({"rank": 2}, {"name": "x"}, {"rank": 1}),),
         raises=TypeError),
    Case("raises_runtime_error_from_generator", generator_leaking_stop_iteration, (([1, 2], [], [3]),),
         raises=RuntimeError),
    Case("raises_attribute_error_through_with", attribute_error_through_context, ("missing",),
         raises=AttributeError),
    Case("raises_overflow_while_handling", overflow_while_handling, ((2, 0, 4),), raises=OverflowError),
    Case("raises_index_error_rpn_underflow", evaluate_rpn, ("1 +",), raises=IndexError),
    Case("raises_parse_error_deep", parse_arithmetic, ("(1 + (2 * (3 - ))",), raises=ParseError),
    Case("raises_validation_error_in_sort_key", validate_sort_key, ((3, 1, -2, 5),), raises=ValidationError),
    Case("raises_value_error_bad_config", parse_key_value_config, ("a = 1\nbroken line\n",), raises=ValueError),
    Case("raises_value_error_bad_command", run_stack_commands, (("push 1", "jump 4"),), raises=ValueError),
    # functions that mutate their arguments
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

if np is not None:
    CASES += [
        Case("numpy_statistics", numpy_statistics, ([3, 1, 4, 1, 5, 9, 2, 6],)),
        Case("numpy_matrix_ops", numpy_matrix_ops, (4,)),
        Case("numpy_linear_solve", numpy_linear_solve, (((3, 1), (1, 2)), (9, 8))),
        Case("numpy_python_callbacks", numpy_python_callbacks, ([6, 7, 12, 27],)),
        Case("numpy_broadcast_and_index", numpy_broadcast_and_index),
    ]


def _self_check():
    import copy

    names = set()
    for case in CASES:
        assert case.name not in names, f"duplicate case name {case.name!r}"
        names.add(case.name)
        outcomes = []
        for _ in range(2):
            args, kwargs = case.arguments()
            snapshot = None if case.make_args is not None else copy.deepcopy((args, kwargs))
            if case.raises is not None:
                try:
                    case.func(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - checked below
                    if type(exc) is not case.raises:
                        raise AssertionError(
                            f"{case.name}: raised {type(exc).__name__}, expected {case.raises.__name__}") from exc
                    outcomes.append(type(exc))
                else:
                    raise AssertionError(f"{case.name}: did not raise {case.raises.__name__}")
            else:
                outcomes.append(case.func(*args, **kwargs))
            if snapshot is not None:
                assert (args, kwargs) == snapshot, f"{case.name}: mutated arguments shared between runs"
        assert outcomes[0] == outcomes[1], f"{case.name}: results differ: {outcomes[0]!r} != {outcomes[1]!r}"
    note = "" if np is not None else " (numpy not importable: numpy cases skipped)"
    print(f"{len(CASES)} cases OK{note}")


if __name__ == "__main__":
    _self_check()
