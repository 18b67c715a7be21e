"""Corpus: User classes: properties, static/class methods, super(), dunders."""

import dataclasses
import functools
import itertools
import math
import operator
from collections import defaultdict, namedtuple
from dataclasses import dataclass, field

from .common import Case, ValidationError


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


CASES = [
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
]
