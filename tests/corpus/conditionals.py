"""Corpus: Conditionals, boolean logic, walrus, match."""

import itertools

from .common import Case, GOLDEN_RATIO
from .common import TAX_RATE  # noqa: F401 - read through `global TAX_RATE` in apply_tax
from .classes import Point, Segment, Version


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


CASES = [
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
    Case("raises_value_error_bad_command", run_stack_commands, (("push 1", "jump 4"),), raises=ValueError),
]
