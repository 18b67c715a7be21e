"""Tapes of standard-library calls (deep, varied Python code) replay exactly."""

import collections
import copy
import csv
import datetime
import decimal
import difflib
import fractions
import heapq
import io
import json
import pprint
import re
import statistics
import string
import textwrap

import pytest

import tracer

CASES = [
    (json.dumps, ({"a": [1, 2, {"b": None}], "c": "x"},), {"sort_keys": True}),
    (json.loads, ('{"a": [1, 2.5, null]}',), {}),
    (textwrap.wrap, ("the quick brown fox jumps over the lazy dog " * 3, 20), {}),
    (textwrap.dedent, ("    a\n    b\n",), {}),
    (statistics.mean, ([1, 2, 3, 4.5],), {}),
    (statistics.median, ([3, 1, 2],), {}),
    (statistics.pstdev, ([1.0, 2.0, 4.0],), {}),
    (fractions.Fraction, (3, 12), {}),
    (lambda: fractions.Fraction(1, 3) + fractions.Fraction(1, 6), (), {}),
    (collections.Counter, ("abracadabra",), {}),
    (lambda s: collections.Counter(s).most_common(2), ("abracadabra",), {}),
    (string.capwords, ("hello   world",), {}),
    (heapq.nsmallest, (3, [5, 1, 4, 2, 3]), {}),
    (copy.deepcopy, ({"a": [1, [2, 3]]},), {}),  # a mutable default: deepcopy(x, memo, _nil=[])
    (pprint.pformat, ({"a": list(range(30))},), {}),
    (lambda a, b: list(difflib.ndiff(a, b)), (["a\n", "b\n"], ["a\n", "c\n"]), {}),
    (lambda s: list(csv.reader(io.StringIO(s))), ("a,b\n1,2\n",), {}),
    (lambda: datetime.date(2024, 1, 31) + datetime.timedelta(days=1), (), {}),
    (lambda x: decimal.Decimal(x).quantize(decimal.Decimal("0.01")), ("3.14159",), {}),
    (re.sub, (r"(\w+)@(\w+)", r"\2 at \1", "joe@example"), {}),
]


@pytest.mark.parametrize("f,args,kwargs", CASES, ids=[f"{k}" for k in range(len(CASES))])
def test_stdlib_call_round_trips(f, args, kwargs):
    expected = f(*args, **kwargs)
    val, tape = tracer.tape(f, *args, **kwargs)
    tape.validate()
    assert val == expected
    assert tape.play(*args, **kwargs) == expected
    assert tape.compile()(*args, **kwargs) == expected
