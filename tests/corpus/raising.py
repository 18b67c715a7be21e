"""Corpus: Functions that raise."""

import math

from .common import Case, ConfigError, ValidationError
from .operators import Tally
from .exceptions import RecordingContext


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


CASES = [
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
    Case("raises_validation_error_in_sort_key", validate_sort_key, ((3, 1, -2, 5),), raises=ValidationError),
]
