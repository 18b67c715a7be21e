"""Corpus: Lambdas, closures, decorators, functools."""

import functools
import math
import operator

from .common import Case
from .calls import _format_call


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


CASES = [
    Case("closure_counters", closure_counters),
    Case("closure_late_binding", closure_late_binding),
    Case("closure_nonlocal_read_back", closure_nonlocal_read_back, (5,)),
    Case("nested_function_scopes", nested_function_scopes, (4,)),
    Case("function_composition", function_composition, ([1, 7, 33],)),
    Case("decorated_functions", decorated_functions, (((3, 4), (50, 20), (1, 200)),)),
    Case("partial_application", partial_application, ([1, 2, 3, 4],)),
    Case("reduce_variety", reduce_variety, ([3, 5, 2, 8, 9, 1],)),
    Case("lru_cache_inside", lru_cache_inside, (15,)),
]
