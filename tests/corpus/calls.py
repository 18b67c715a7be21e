"""Corpus: Calling conventions."""


from .common import Case


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


CASES = [
    Case("call_conventions", call_conventions),
    Case("weighted_total", weighted_total, (1, 2, 3), {"weight": 2.0, "bonus": 5, "penalty": -1}),
    Case("weighted_total_defaults", weighted_total, (4.5, 0.5)),
    Case("forward_everything", forward_everything, (1, 2, 3), {"flag": True, "mode": "fast"}),
]
