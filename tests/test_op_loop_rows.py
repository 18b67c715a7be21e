"""The op loop's own rows (replay.pxi) are the rows the per-row writers make.

In a frame whose context has no per-row hooks, `_run_to_end` writes the rows of
primitive ops and silent jumps itself, through column pointers in locals, into
room reserved once per run.  A context with any node hook takes the per-row path
(`_record_primitive`, `_jump_row`).  Both must give the same trace, column by
column and value by value, also when the columns grow in the middle of a run and
under a value policy.
"""

import re

import pytest

import tracer
from tracer.context import Context

from helpers import assert_same_trace, track_both, ReturnHook

COLUMNS = ("kind", "flags", "parent", "offset", "aux", "ref_start", "refs", "code")


def loop(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


def straight(a, b):
    # One segment of many records: a run that reserves room for all of them.
    c = a + b; d = c * a; e = d - b; f = e * c; g = f + d
    h = g - e; i = h * 2; j = i + 7; k = j - c; m = k * d
    n = m + 1.5; o = n - a; p = o * b; q = p + 3; s = q - 2
    return s + c + d + e + f + g + h + i + j + k + m + n + o + p + q


def mixed(xs):
    # Calls (rows opened for nested frames), multi-output ops, constants first
    # used mid-run, comparisons into branches, a for loop.
    total = 0
    for k, v in enumerate(xs):
        a, b = divmod(v, 3)
        if a > b:
            total += straight(a, b)
        else:
            total -= len(str(v)) * 1.25
    return total


def _sans_address(value):
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def _columns(root):
    trace = root.trace
    cols = trace.columns()
    return {name: cols[name].tolist() for name in COLUMNS}, trace


def _same_under_policy(func, args, values):
    # The op loop's trace and the per-row writers' under a value policy: the
    # columns equal; pool refs compared by the values they name, since a raw ref
    # depends on the pool's address-keyed cache (two objects sharing one of its
    # slots each get an entry); values by their repr without addresses (objects
    # each run makes, a lambda, an iterator: equal but for where they live).
    fast = tracer.track(func, *args, ctx=Context(values=values))
    slow = tracer.track(func, *args, ctx=ReturnHook(values=values))
    a, ta = _columns(fast)
    b, tb = _columns(slow)
    for name in COLUMNS:
        if name != "refs":
            assert a[name] == b[name], f"column {name} differs"
    pa = [r if r >= 0 else _sans_address(ta.pool[-r - 1]) for r in a["refs"]]
    pb = [r if r >= 0 else _sans_address(tb.pool[-r - 1]) for r in b["refs"]]
    assert pa == pb
    for row in range(len(ta)):
        assert _sans_address(ta.value(row)) == _sans_address(tb.value(row)), f"value of row {row}"
    tracer.validate(fast)
    tracer.validate(slow)


def _same_trace(fast, slow):
    # (pool refs compared by the pooled value: which entry a captured value gets
    # depends on Recorder._pool_ref's cache, hashed by address)
    assert_same_trace(fast, slow, fewer_events=True)


def _same_in_a_second_trace(func, *args):
    # A second trace of the same code (plans kept, a fresh pool): the op loop's
    # rows equal the per-row writers' and the first trace's.
    first = tracer.track(func, *args)
    fast = tracer.track(func, *args)
    slow = tracer.track(func, *args, ctx=ReturnHook())
    _same_trace(fast, slow)
    _same_trace(first, fast)


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [
    (loop, (1.0001, 3000)),
    (straight, (3, 4.5)),
    (mixed, (list(range(400)),)),
])
def test_op_loop_rows_match_the_per_row_writers(call, fresh):
    f, args = call
    # fresh: no spare columns, so the first capacity is small and the columns grow
    # inside runs of the loop.
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == f(*args)
    _same_trace(fast, slow)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_op_loop_rows_under_a_value_policy(values):
    _same_under_policy(mixed, (list(range(200)),), values)


def _twice(v):
    return v * 2


def branches(xs):
    # Conditional jumps of every kind, each taken both ways: on a certain bool
    # (compare, `is`, `in`: a RECORD_BOOL on 3.13), on any value's truth, on
    # `is None`; loops on both sides; a branch whose next event is a call's
    # (PY_START) or a return's, not an INSTRUCTION.
    total = 0
    for v in xs:
        if v is None:
            total += 1
            continue
        if not v:
            total -= 1
        elif v > 5 and v < 50:
            total += v
        if v in (3, 4):
            total *= 2
        y = v if v else 0
        if y is not None:
            total += 1
        while y > 3:
            y //= 2
        if v % 3:
            total += _twice(v)
    return total


def last_branch(a, b):
    # The silent branch is taken at the PY_RETURN event.
    if a < b:
        return a
    return b


def returned_sum(a, b):
    # The silent branch taken at the PY_RETURN event, and the side it leads to
    # records an operator whose result is read from the value returned
    # (READ_RETURNED): one op-loop run for the branch and that side.
    if a < b:
        return a + b
    return a * b


def fib(n):
    # Leaves return on the silent branch's side; internal calls on the other.
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def flag_loop(n):
    # A branch on a local that holds a constant (a constant's row as the condition).
    go = True
    k = 0
    while go:
        k += 1
        if k >= n:
            go = False
    return k


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [
    (branches, ([None, 0, 1, 3, 4, 7, 60, 2.5, 0.0, None, 12] * 60,)),
    (last_branch, (1, 2)),
    (last_branch, (3, 2)),
    (returned_sum, (1, 2)),
    (returned_sum, (3, 2)),
    (returned_sum, (1.5, 2)),
    (fib, (12,)),
    (flag_loop, (500,)),
])
def test_branches_taken_in_the_op_loop_match_the_per_row_writers(call, fresh):
    # A branch the next event shows taken is written by the op loop (_run_ops),
    # and the run goes on through the segment it leads to; under a node hook
    # _take_branch writes it.  Same trace either way.
    f, args = call
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == f(*args)
    _same_trace(fast, slow)


# -- for loops: FOR_ITER taken in the op loop ------------------------------------------
# A FOR_ITER at its BRANCH event is written by the op loop (_run_ops): the next
# value's row and the jump's, or on exhaustion the jump's alone; under a node hook
# _for_iter writes them, and so it does when a Python frame ran under the FOR_ITER
# (a generator or a Python __next__: its row is open).


def _gen(n):
    for k in range(n):
        yield k * 2


class Countdown:
    """An iterator whose __next__ is Python: a frame entered under every FOR_ITER."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n


def _returns_value(n):
    # A generator that returns a value: StopIteration raised, FOR_ITER swallows it.
    for k in range(n):
        yield k
    return "done"


def for_shapes(xs):
    total = 0
    for v in xs:                          # a list
        total += v
    for v in range(3, len(xs), 2):        # a range
        total -= v
    for v in (1, 2.5, "s", None):         # a constant tuple
        total += 1 if v else 0
    for v in ():                          # exhausted at once
        total += 100
    for k, v in enumerate(xs[:20]):       # unpacking the next value
        total += k * v
    for a, b in zip(xs, reversed(xs)):
        total += a - b
    for key in {"a": 1, "b": 2}:          # a dict's keys
        total += len(key)
    for c in "abc":                       # a string
        total += ord(c)
    for v in _gen(30):                    # a generator: resumed under FOR_ITER
        total += v
    for v in Countdown(12):               # a Python __next__
        total += v
    for v in _returns_value(7):
        total += v
    for v in map(lambda q: q + 1, xs[:15]):   # a C iterator calling Python
        total += v
    for i in range(6):                    # nested loops, break and continue
        for j in range(i, 9):
            if j == 7:
                break
            if j % 2:
                continue
            total += i * j
        else:
            total += 1000
    for v in xs:                          # for-else, the else taken
        if v < 0:
            break
    else:
        total += 7
    return total


def for_events(xs):
    # The segment after the FOR_ITER ends at every kind of event: an
    # INSTRUCTION, a call's PY_START, a return's PY_RETURN, a RAISE caught here.
    total = 0
    for v in xs:
        total += _twice(v)                # PY_START
    for v in xs:
        try:
            if v % 5 == 0:
                raise ValueError(v)       # RAISE
            total += v
        except ValueError:
            total -= 1
    for v in xs:
        if v > len(xs) // 2:
            return total + v              # PY_RETURN inside the loop
    return total


def for_in_generator(xs):
    # A loop in a generator frame that yields inside its body: the iterator is
    # carried across each resume.
    for v in xs:
        yield v + 1
        for w in range(2):
            yield v * w


def for_in_generator_sum(xs):
    return sum(for_in_generator(xs))


def stores(xs):
    # Ops with no result (stores into a subscript, a slice, an attribute, deletes):
    # their rows are written by the op loop too.
    box = Countdown(0)
    out = [0] * len(xs)
    for i, v in enumerate(xs):
        out[i] = v * 2
        box.n = v
        out[i:i + 1] = [box.n]
    d = {}
    for v in xs:
        d[v] = v
        del d[v]
    return out


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [
    (for_shapes, (list(range(1, 60)),)),
    (for_shapes, ([],)),
    (for_events, (list(range(40)),)),
    (for_in_generator_sum, (list(range(25)),)),
    (stores, (list(range(50)),)),
])
def test_for_loops_taken_in_the_op_loop_match_the_per_row_writers(call, fresh):
    f, args = call
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == f(*args)
    _same_trace(fast, slow)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_for_loops_under_a_value_policy(values):
    _same_under_policy(for_shapes, (list(range(1, 40)),), values)


# -- inputs already in the pool (shadow tag 2) ----------------------------------------
# A callable captured off the frame (a method descriptor for `word.lower()`, a
# global or builtin function) is a pool ref in the shadow.  The op loop writes
# the rows that take it as an input itself (_row_inputs) instead of handing
# them to _record_primitive; the ref must be the one _ref gives.

def method_calls(words):
    counts = {}
    for word in words:
        key = word.lower().strip()
        counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items())


def _double(v):
    return v * 2


def pooled_callables(xs):
    # Builtins and a Python function (a nested frame) read as globals, methods
    # of list/str/dict, a bound method kept in a local, a method called with
    # constants first used in the run, a no-result op whose input is pooled.
    out = []
    push = out.append
    d = {}
    for v in xs:
        push(len(str(v)) + abs(-v))
        out.append(_double(v))
        d.setdefault(v % 3, []).append(v)
        s = "-".join(["a", str(v)]).upper().replace("-", "+")
        out.append(s.count("+"))
        d[max] = min(v, 4)
    return out, sorted((k, len(w)) for k, w in d.items() if k is not max)


def _pooled_callable_refs(root):
    trace = root.trace
    refs = trace.columns()["refs"].tolist()
    return {repr(trace.pool[-r - 1]) for r in refs if r < 0}


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [
    (method_calls, (["Apple ", "pear", "APPLE", " fig", "pear"] * 40,)),
    (pooled_callables, (list(range(60)),)),
])
def test_rows_with_pooled_inputs_match_the_per_row_writers(call, fresh):
    f, args = call
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == f(*args)
    assert_same_trace(fast, slow, fewer_events=True)
    # The case is exercised: the rows' inputs name the captured callables.
    pooled = _pooled_callable_refs(fast)
    if f is method_calls:
        assert {"<method 'lower' of 'str' objects>", "<method 'strip' of 'str' objects>",
                "<method 'get' of 'dict' objects>"} <= pooled
    else:
        assert {"<built-in function len>", "<class 'str'>", "<built-in function abs>",
                "<method 'upper' of 'str' objects>"} <= pooled


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_rows_with_pooled_inputs_under_a_value_policy(values):
    # Under a policy the pool may keep a summary in place of a captured value
    # (Recorder._pool_ref then skips its cache): the refs still agree.
    args = (["Apple ", "pear", "APPLE", " fig"] * 30,)
    _same_under_policy(method_calls, args, values)


def test_rows_with_pooled_inputs_in_a_second_trace():
    # A second trace of the same code (plans kept, a fresh pool): the refs are
    # that trace's own, not the first one's.
    args = (["Apple ", "pear", "fig"] * 20,)
    first = tracer.track(method_calls, *args)
    fast = tracer.track(method_calls, *args)
    slow = tracer.track(method_calls, *args, ctx=ReturnHook())
    assert_same_trace(fast, slow, fewer_events=True)
    assert_same_trace(first, fast)


# -- the trace's counts: kept in the loop's locals, stored before any call out of it ------
def _gen_mid(n):
    # Resumed mid-body: its locals are carried (ArgumentNodes written by _carried)
    # in runs that wrote rows of their own first.
    k = 0
    while k < n:
        got = yield k * 2 + 1
        k = k + (got or 1)


def mid_run_calls(xs):
    # Each run writes rows in the loop and then leaves it for a writer of its
    # own: a constant stored (_stored), a constant first used (_record_primitive),
    # a builtin captured for the first time (_capture), a method of a new object
    # (_capture_method), a Python call (_record opens its row), a generator's
    # carried locals.
    total = 0.0
    for v in xs:
        a = v * 2 + 1
        b = 7
        c = a - b * 3.5
        d = abs(c) + round(c, 1)
        s = str(v)
        e = len(s.upper()) + _twice(a)
        total += d + e
    for g in _gen_mid(len(xs)):
        total += g * 0.5 - 1
    return total


def raises_mid_run(xs):
    # An exception raised by an op after rows written in the same run: the rows
    # before it are the trace's when the RAISE event and the handler read it.
    total = 0.0
    for v in xs:
        a = v * 2 + 1
        c = a - 1.5
        try:
            e = c / (v - v)
        except ZeroDivisionError:
            e = -c
        total += e + a
    return total


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [
    (mid_run_calls, (list(range(60)),)),
    (raises_mid_run, (list(range(60)),)),
])
def test_rows_before_a_call_out_of_the_loop_match_the_per_row_writers(call, fresh):
    f, args = call
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == f(*args)
    _same_trace(fast, slow)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_rows_before_a_call_out_of_the_loop_under_a_value_policy(values):
    for f in (mid_run_calls, raises_mid_run):
        _same_under_policy(f, (list(range(60)),), values)


# -- a segment of one RECORD and its END: its row written without the loop (_single_row) ---
def single_records(bodies, words):
    # Results read where the instruction consuming them waits, one row per
    # event: nbody's `b1[k] -= d * m` (the `-=` read before its STORE_SUBSCR),
    # a sum read before `** -1.5`, a chained method call's first result, a
    # constant used first in such a row (its input pooled first: the loop's),
    # a result whose consumer is a call of a Python function.  (The bodies are
    # copied: both traces of a comparison see the same inputs.)
    bodies = [list(b) for b in bodies]
    out = []
    for b1, b2 in zip(bodies, bodies[1:]):
        dx = b1[0] - b2[0]
        dy = b1[1] - b2[1]
        mag = 0.01 * (dx * dx + dy * dy) ** -1.5
        b1[3] -= dx * mag
        b2[3] += dy * mag
        out.append([2.5 - (dx * dy + mag * dx) * (dy * dy + mag * mag)])
        out.append(_twice(dx * dy + mag))
    for w in words:
        out.append(w.lower().strip())
    return out


def _bodies(n):
    return [[0.5 * k, 1.0 - k, 0.25 * k * k, 0.1, 0.2, 0.3, 1.0 + k] for k in range(n)]


_WORDS = [" Apple ", "pear", "APPLE", " fig "] * 10


@pytest.mark.parametrize("fresh", [False, True])
def test_single_record_segments_match_the_per_row_writers(fresh):
    fast, slow = track_both(single_records, (_bodies(40), _WORDS), ReturnHook(), fresh=fresh)
    assert repr(fast.value) == repr(slow.value) == repr(single_records(_bodies(40), _WORDS))
    _same_trace(fast, slow)


def test_single_record_segments_in_a_second_trace():
    # The constants pooled by the first trace are not the second's: rows with a
    # constant input take the loop (an input to pool first) in each trace.
    _same_in_a_second_trace(single_records, _bodies(10), _WORDS)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_single_record_segments_under_a_value_policy(values):
    args = (_bodies(20), _WORDS)
    _same_under_policy(single_records, args, values)


def test_single_record_segments_are_exercised():
    # The shapes above do give segments of one RECORD and its END.
    from tracer._core import plan_of
    from tracer.analysis.microops import M_END, M_RECORD, OP_WORDS
    ops = list(plan_of(single_records.__code__).ops)
    codes = ops[0::OP_WORDS]
    singles = [i for i in range(len(codes) - 1)
               if codes[i] == M_RECORD and codes[i + 1] == M_END
               and (i == 0 or codes[i - 1] == M_END)]
    assert len(singles) >= 3


# -- a segment of one RECORD and the return it feeds, at the PY_RETURN (_single_row) ---
class Num:
    # An operand whose `+`, `*` and unary `-` are Python code: a frame entered under
    # the RECORD, its row opened and completed before the return.
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return Num(self.v + (other.v if isinstance(other, Num) else other))

    def __mul__(self, other):
        return Num(self.v * other)

    def __neg__(self):
        return Num(-self.v)

    def __repr__(self):
        return f"Num({self.v!r})"


def returned_sum_of_calls(a, b):
    # fib's shape: the `+` after the second call's return, read from the value
    # the PY_RETURN hands over.
    return _twice(a) + _twice(b)


def returned_negation(a):
    return -_twice(a)


def returned_sum_of_builtins(a, b):
    # The callees are C functions: the `+`'s own event stays on; its segment
    # is still the RECORD and the return.
    return abs(a) + abs(b)


def return_records(xs):
    out = []
    for k, x in enumerate(xs):
        out.append(returned_sum_of_calls(x, k))
        out.append(returned_negation(x))
        out.append(returned_sum_of_builtins(x, -k))
    out.append(returned_sum_of_calls(Num(1), Num(2)))
    out.append(returned_negation(Num(3)))
    out.append(returned_sum_of_calls("ab", "c"))
    return out


_RETURN_ARGS = ([1, 2.5, -3, 10 ** 20, 0.125] * 30,)


@pytest.mark.parametrize("fresh", [False, True])
def test_return_record_segments_match_the_per_row_writers(fresh):
    fast, slow = track_both(return_records, _RETURN_ARGS, ReturnHook(), fresh=fresh)
    assert repr(fast.value) == repr(slow.value) == repr(return_records(*_RETURN_ARGS))
    _same_trace(fast, slow)


@pytest.mark.parametrize("fresh", [False, True])
def test_fib_returns_match_the_per_row_writers(fresh):
    fast, slow = track_both(fib, (15,), ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == fib(15)
    _same_trace(fast, slow)


def test_return_record_segments_in_a_second_trace():
    _same_in_a_second_trace(return_records, *_RETURN_ARGS)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_return_record_segments_under_a_value_policy(values):
    _same_under_policy(return_records, _RETURN_ARGS, values)


def test_return_record_segments_are_exercised():
    # Each returning function above ends in a segment that is one RECORD and
    # the M_RETURN it feeds.
    from tracer._core import plan_of
    from tracer.analysis.microops import M_END, M_RECORD, M_RETURN, OP_WORDS
    for f in (returned_sum_of_calls, returned_negation, returned_sum_of_builtins, fib):
        tracer.track(f, *((3, 4) if f in (returned_sum_of_calls, returned_sum_of_builtins)
                          else (3,)))
        codes = list(plan_of(f.__code__).ops)[0::OP_WORDS]
        assert any(codes[i] == M_RECORD and codes[i + 1] == M_RETURN and codes[i - 1] == M_END
                   for i in range(1, len(codes) - 1)), f.__name__


# -- a call's row still open at the PY_RETURN that returns its result (_close_open_call) ---
def countdown(n, acc):
    # geom's shape: the call's result is the value returned, so the callee's
    # return leaves the call op open for the caller's return to complete.
    if n <= 0:
        return acc
    return countdown(n - 1, acc + n)


def returned_sorted(xs):
    # A C function that runs Python code (the key) under the call: its row is
    # open, a nested node of its own, completed at the return.
    return sorted(xs, key=_twice)


def returned_from_generator(xs):
    def gen():
        for x in xs:
            yield _twice(x)
        return countdown(3, 0)
    return list(gen())


def open_call_returns(xs):
    out = []
    for x in xs:
        out.append(countdown(x % 7, x))
        out.append(returned_sorted([x, -x, 3]))
    out.append(returned_from_generator(xs[:10]))
    out.append(countdown(4, Num(0)))
    return out


_OPEN_ARGS = (list(range(-5, 60)),)


@pytest.mark.parametrize("fresh", [False, True])
def test_open_calls_completed_at_the_return_match_the_per_row_writers(fresh):
    fast, slow = track_both(open_call_returns, _OPEN_ARGS, ReturnHook(), fresh=fresh)
    assert repr(fast.value) == repr(slow.value) == repr(open_call_returns(*_OPEN_ARGS))
    _same_trace(fast, slow)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_open_calls_completed_at_the_return_under_a_value_policy(values):
    _same_under_policy(open_call_returns, _OPEN_ARGS, values)


def test_open_calls_completed_at_the_return_are_exercised():
    # countdown's last segment is its call op and the return (the call's result
    # read from the value returned), so its row is open at the PY_RETURN.
    from tracer._core import WORDS, plan_of
    from tracer.analysis.microops import M_RECORD, M_RETURN, OP_WORDS
    code, c = WORDS["OP_CODE"], WORDS["OP_C"]
    tracer.track(countdown, 3, 0)
    ops = list(plan_of(countdown.__code__).ops)
    assert any(ops[i + code] == M_RECORD and ops[i + OP_WORDS + code] == M_RETURN
               and ops[i + c] < 0 for i in range(0, len(ops) - OP_WORDS, OP_WORDS))


# -- a segment of loads, one RECORD and its END (session 17 wrote these rows outside the
# loop, measured no gain on both interpreters and went back to the loop: the tests stay) --
def load_led_records(bodies, words, zs):
    # Results read at the instruction after them, where the segment that made
    # them starts with loads: words' `counts.get(key, 0) + 1` and nbody's
    # `** -1.5` (a constant), a local times a call's result (a local), the
    # constant used first in such a row (its input pooled first).
    bodies = [list(b) for b in bodies]
    out = []
    counts = {}
    for w in words:
        key = w.strip()
        counts[key] = counts.get(key, 0) + 1
    for b1, b2 in zip(bodies, bodies[1:]):
        dx = b1[0] - b2[0]
        mag = 0.01 * (dx * dx + 1.0) ** -1.5
        b1[3] = abs(dx) * mag
        out.append(abs(mag) * dx)
    for z in zs:
        out.append(len(words) * z)
    return out, counts


def _carrier(z):
    # Resumed: `z` is a local carried in (an ArgumentNode written by _carried),
    # read first by a segment `LOAD_LOCAL z, RECORD *, END`.
    out = []
    t = yield
    while True:
        out.append(len(t) * z)
        t = yield out


def resume_carrier(z, items):
    g = _carrier(z)
    next(g)
    return [len(g.send(t)) for t in items]


_LOAD_LED_ARGS = (_bodies(40), _WORDS, [0.5, 1.5, 2.5] * 10)


@pytest.mark.parametrize("fresh", [False, True])
def test_load_led_single_record_segments_match_the_per_row_writers(fresh):
    fast, slow = track_both(load_led_records, _LOAD_LED_ARGS, ReturnHook(), fresh=fresh)
    assert repr(fast.value) == repr(slow.value) == repr(load_led_records(*_LOAD_LED_ARGS))
    _same_trace(fast, slow)


def test_load_led_single_record_segments_in_a_second_trace():
    _same_in_a_second_trace(load_led_records, *_LOAD_LED_ARGS)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_load_led_single_record_segments_under_a_value_policy(values):
    _same_under_policy(load_led_records, _LOAD_LED_ARGS, values)


def test_load_led_single_record_segment_with_a_carried_local():
    items = ["ab", "cde", "f"] * 5
    fast = tracer.track(resume_carrier, 3, items)
    slow = tracer.track(resume_carrier, 3, items, ctx=ReturnHook())
    assert fast.value == slow.value == resume_carrier(3, items)
    _same_trace(fast, slow)
    # `z` (3) entered as a carried ArgumentNode: the case is exercised.
    from tracer._core import NodeFlag, NodeKind
    cols = fast.trace.columns()
    carried = [row for row in range(len(fast.trace))
               if cols["kind"][row] == NodeKind.K_ARGUMENT and cols["flags"][row] & NodeFlag.F_CARRIED]
    assert 3 in [fast.trace.value(row) for row in carried]


def test_load_led_single_record_segments_are_exercised():
    from tracer._core import plan_of
    from tracer.analysis.microops import M_END, M_LOAD_CONST, M_LOAD_LOCAL, M_RECORD, OP_WORDS
    for code, least in ((load_led_records.__code__, 3), (_carrier.__code__, 1)):
        codes = list(plan_of(code).ops)[0::OP_WORDS]
        led = [i for i in range(1, len(codes) - 1)
               if codes[i] == M_RECORD and codes[i + 1] == M_END
               and codes[i - 1] in (M_LOAD_CONST, M_LOAD_LOCAL)]
        assert len(led) >= least, code.co_name


def first_rows(xs, n):
    # Runs whose first row is each of the op loop's writers (a store into a
    # subscript: no result; a comparison into a taken branch; a loop's jump
    # back): the room for a run is made at whichever row comes first.
    out = [0] * n
    i = 0
    while i < n:
        out[i] = xs[i % len(xs)] * 2
        if out[i] > 3:
            out[i] -= 1
        i += 1
    return out


@pytest.mark.parametrize("fresh", [False, True])
def test_runs_opened_at_each_kind_of_first_row_match_the_per_row_writers(fresh):
    # fresh: the columns start small and grow at the first row of many runs.
    fast, slow = track_both(first_rows, ([1, 2, 3, 5.5], 5000), ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == first_rows([1, 2, 3, 5.5], 5000)
    _same_trace(fast, slow)


def test_runs_opened_at_each_kind_of_first_row_in_a_second_trace():
    _same_in_a_second_trace(first_rows, [1, 2, 3, 5.5], 3000)


# -- straight-line segments and silent branches -----------------------------
# (_straight_ops: loads, constants, SETs, COPY/SWAP, cached captures and
# one-result records up to an END or the return; silent branches before and
# after such segments: session 18 wrote them without the loop too
# (_straight_branch), removed at the merge: h +14 instructions per node)
def straight_segments(xs, k):
    # fib's second-call shape (SET, SET, LOAD_LOCAL, LOAD_CONST, RECORD,
    # CAPTURE, END), a COPY, builtins captured, a method captured
    # (CAPTURE_METHOD: the loop's, from where the writer stopped), constants
    # first used mid-segment (an input to pool first: the loop's too).
    out = []
    for x in xs:
        a, b = x, x + k
        b, a = a, b
        out.append(_twice(a - b) + _twice(b * 2))
        out.append(abs(a - 1.5) + len(str(b)) + _twice(-a))
        out.append("-".join([str(a)]).upper())
    return out


def swaps(xs):
    # SWAPs (a subscript swap) between records.
    xs = list(xs)
    for i in range(len(xs) - 1):
        xs[i], xs[i + 1] = xs[i + 1], xs[i] * 2
    return _twice(xs[0]) + _twice(xs[-1] - 1)


def leaf_or_sum(n, m):
    # fib's shape with a record at the leaf's return (`n * 2`, read from the
    # value returned) after the silent branch.
    if n < m:
        return n * 2
    return leaf_or_sum(n - 1, m) + _twice(n - 2)


def none_or_sum(x, y):
    # A branch with no bool record: its condition a parameter's row (IF_NONE).
    if x is None:
        return y
    return x + y


def truthy(x, y):
    # The side the branch takes ends at a call's event (the INSTRUCTION case).
    if x:
        return _twice(y) + 1
    return -y


def not_none_call(x, y):
    if x is not None:
        return _twice(x) - len(str(y))
    return y


def side_with_dunder(x, y):
    # A Python `__add__` entered inside the side the branch takes (the
    # branch caught up at that frame's entry).
    if x > 0:
        return y + y
    return y


def straight_shapes(xs):
    out = []
    for k, x in enumerate(xs):
        out.append(straight_segments([x, x + 0.5], k))
        out.append(leaf_or_sum(k % 7 + 3, 2))
        out.append(none_or_sum(None if k % 3 == 0 else x, k))
        out.append(truthy(k % 2, x))
        out.append(not_none_call(x if k % 4 else None, k))
        out.append(side_with_dunder(k % 3 - 1, Num(x)))
        out.append(swaps([x, k, 2.5]))
    return out


_STRAIGHT_ARGS = ([1, 2.5, -3, 10 ** 20, 0.125, 7] * 8,)


@pytest.mark.parametrize("fresh", [False, True])
def test_straight_segments_match_the_per_row_writers(fresh):
    fast, slow = track_both(straight_shapes, _STRAIGHT_ARGS, ReturnHook(), fresh=fresh)
    assert repr(fast.value) == repr(slow.value) == repr(straight_shapes(*_STRAIGHT_ARGS))
    _same_trace(fast, slow)


@pytest.mark.parametrize("call", [
    (leaf_or_sum, (12, 2)),
    (none_or_sum, (None, 3)),
    (none_or_sum, (2, 3)),
    (truthy, (0, 3)),
    (truthy, (1, 3)),
    (not_none_call, (None, 3)),
    (not_none_call, (4, 3)),
    (side_with_dunder, (1, Num(2))),
    (straight_segments, ([1, 2.5], 3)),
    (swaps, ([1, 2, 3],)),
])
@pytest.mark.parametrize("fresh", [False, True])
def test_straight_segments_alone_match_the_per_row_writers(call, fresh):
    # Each function traced as the root: its first segment's rows are the first
    # of the trace (captures and constants never pooled before).
    f, args = call
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert repr(fast.value) == repr(slow.value) == repr(f(*args))
    _same_trace(fast, slow)


def test_straight_segments_in_a_second_trace():
    _same_in_a_second_trace(straight_shapes, *_STRAIGHT_ARGS)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_straight_segments_under_a_value_policy(values):
    _same_under_policy(straight_shapes, _STRAIGHT_ARGS, values)


def test_straight_segments_are_exercised():
    # The shapes above give what the writers take: a segment of SETs, loads, a
    # record and a capture up to an END; a COPY and a SWAP; a silent branch
    # after a bool record and after none (its condition a parameter); the side
    # a branch leads to ending at a call's event and at the return.
    from tracer._core import plan_of
    from tracer.analysis.microops import (M_BRANCH, M_CAPTURE, M_COPY, M_END, M_RECORD,
                                          M_RECORD_BOOL, M_RETURN, M_SET, M_SWAP, OP_WORDS)
    tracer.track(straight_shapes, _STRAIGHT_ARGS[0][:2])

    def ops(f):
        return list(plan_of(f.__code__).ops)[0::OP_WORDS]

    def silent(f):
        return [i for i, k in enumerate(plan_of(f.__code__).branch_sides_at) if k >= 0]

    codes = ops(straight_segments)
    assert any(codes[i:i + 7] == [M_SET, M_SET, codes[i + 2], codes[i + 3], M_RECORD, M_CAPTURE, M_END]
               for i in range(len(codes) - 6))
    assert M_COPY in codes
    assert M_SWAP in ops(swaps)
    for f, bool_record in ((leaf_or_sum, True), (none_or_sum, False), (truthy, False),
                           (not_none_call, False), (side_with_dunder, True)):
        at = silent(f)
        assert at, f.__name__
        codes = ops(f)
        assert (M_RECORD_BOOL in [codes[i] for i in at]) == bool_record, f.__name__
        assert M_BRANCH in [codes[i] for i in at], f.__name__
    codes = ops(leaf_or_sum)
    assert any(codes[i] == M_RECORD and codes[i + 1] == M_RETURN for i in range(len(codes) - 1))


# -- session 19: a taken branch's bool row with inputs that are rows (written out in the
# loop), constants or a static (_row_inputs); rows of None, True and False held without a
# reference counted; a row's value read through the frame's locals found once per run ----
_LIMIT = 40


def compares(xs, lo, hi):
    # RECORD_BOOLs into silent branches, each taken both ways: both inputs
    # rows (two locals, a local and a parameter), a row and a constant (its
    # first use in the trace mid-run), a row and a global (a LOAD_GLOBAL's
    # row); `is None` (no bool record); a loop's own compare, h's shape.
    total = 0
    for v in xs:
        w = v * 2
        if lo < w:
            total += 1
        if w < hi:
            total -= 1
        if v < 7:
            total += 3
        if v == w - v:
            total += 2
        if w > _LIMIT:
            total -= 2
        z = None if v % 4 else v
        if z is None:
            total += 5
    k = 0
    while k < hi:
        k += 1
    return total + k


def deferred_results(n):
    # Results read where the next instruction stored them (a RECORD's deferred
    # value, op c > 0), on the stack at the segment's end (c == 0), and the
    # value returned (READ_RETURNED), in one run with a taken branch.
    a = 0.5
    b = 1
    while b < n:
        a = a * 1.5 - b
        b = b + 1
        if a > 1e6:
            a = a / 1e6
    return a + b


@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("call", [
    (compares, (list(range(60)), 10, 45)),
    (compares, ([0.5, -3, 7, 7.0, 22, 100] * 10, -1, 30)),
    (deferred_results, (300,)),
])
def test_bool_rows_and_immortal_values_match_the_per_row_writers(call, fresh):
    f, args = call
    fast, slow = track_both(f, args, ReturnHook(), fresh=fresh)
    assert fast.value == slow.value == f(*args)
    _same_trace(fast, slow)
    # The jumps' rows hold None, True or False themselves, the bools' rows True
    # or False, as the per-row writers' do.
    from tracer._core import NodeKind
    cols, trace = _columns(fast)
    jumps = [row for row, k in enumerate(cols["kind"]) if k == NodeKind.K_JUMP]
    assert jumps
    for row in jumps:
        assert trace.value(row) is None or trace.value(row) is True or trace.value(row) is False


def test_bool_rows_and_immortal_values_in_a_second_trace():
    _same_in_a_second_trace(compares, list(range(60)), 10, 45)
    _same_in_a_second_trace(deferred_results, 300)


@pytest.mark.parametrize("values", ["none", "summary", "weak"])
def test_bool_rows_and_immortal_values_under_a_value_policy(values):
    _same_under_policy(compares, (list(range(60)), 10, 45), values)
    _same_under_policy(deferred_results, (300,), values)


def test_bool_rows_are_exercised():
    # compares' plan has the bool records (RECORD_BOOL, 3.13: a compare into a
    # branch; on 3.12 one may end its segment instead, compare312.pxi) whose
    # rows the op loop writes when their branch is taken in its run.
    import sys
    from tracer._core import plan_of
    from tracer.analysis.microops import M_BRANCH, M_RECORD_BOOL, OP_WORDS
    tracer.track(compares, [1, 2], 0, 3)
    codes = list(plan_of(compares.__code__).ops)[0::OP_WORDS]
    assert M_BRANCH in codes
    if sys.version_info >= (3, 13):
        assert codes.count(M_RECORD_BOOL) >= 5
