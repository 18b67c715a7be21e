"""The recorder's cache of captured callables (replay.pxi's `_pool_ref`).

A global function or method loaded by a traced frame is captured into the
trace's constant pool; a small cache by address finds the pool entry made the
last time, so a callable called 10^6 times has one pool entry, not 10^6.  Each
object has two possible entries: its home (the address's bits 4..12) and one
away from it (a hash of the whole address), where it moves when another object
takes its home.  Callables whose addresses share a home (which the old single
entry made evict each other on every call in some heap layouts) keep their
entries.  Whatever the cache holds, the trace is the same: these tests build
callables whose addresses collide and check the pool's size and the trace
against the general path's.
"""

import types

import pytest

import tracer

from helpers import assert_same_trace, track_both, ReturnHook

_MASK = (1 << 64) - 1
_BITS = 9   # layout.pxi's POOL_CACHE_BITS


def _home(obj):
    # replay.pxi's _pool_home.
    return (id(obj) >> 4) & ((1 << _BITS) - 1)


def _hashed(obj):
    # replay.pxi's _pool_away before it steps off the home.
    return ((id(obj) * 0x9E3779B97F4A7C15) & _MASK) >> (64 - _BITS)


def _away(obj):
    # replay.pxi's _pool_away.
    away = _hashed(obj)
    return away ^ 1 if away == _home(obj) else away


def _low_slot(obj):
    # The old direct-mapped cache's index (address bits 4..11).
    return (id(obj) >> 4) & 255


def _one():
    return 1


def _same_key(key, count, keep):
    """`count` distinct copies of `_one` whose `key` is the same.  `keep`
    holds every copy made (so addresses are not reused while searching)."""
    by_key = {}
    while True:
        f = types.FunctionType(_one.__code__, globals(), "_one")
        keep.append(f)
        group = by_key.setdefault(key(f), [])
        group.append(f)
        if len(group) == count:
            return group


def _calls(fns, n):
    # A module-level loop calling each function by a global name, so each call's
    # LOAD_GLOBAL is a capture.
    names = [f"_callee_{i}" for i in range(len(fns))]
    for name, f in zip(names, fns):
        globals()[name] = f
    body = " + ".join(f"{name}()" for name in names)
    src = f"def run(n):\n    t = 0\n    for i in range(n):\n        t += {body}\n    return t\n"
    ns = {}
    exec(compile(src, "<pool-cache-test>", "exec"), globals(), ns)
    return ns["run"]


def _assert_one_entry_each(f, g, n):
    # `f` and `g` called n times each, in that order, by global name: one pool
    # entry per callable (and the few other captured constants: range), not
    # one per call.
    run = _calls([f, g], n)
    root = tracer.track(run, n)
    assert root.value == run(n) == 2 * n
    pool = root.trace.pool
    assert sum(1 for v in pool if v is f) == 1
    assert sum(1 for v in pool if v is g) == 1
    assert len(pool) < 10


@pytest.mark.parametrize("key", [_low_slot, _home, _away], ids=["old-slot", "same-home", "same-away"])
def test_two_colliding_callables_keep_one_entry_each(key):
    keep = []
    fa, fb = _same_key(key, 2, keep)
    _assert_one_entry_each(fa, fb, 500)


@pytest.mark.parametrize("first", ["hashes-home", "other"])
def test_callable_whose_hash_is_its_home_keeps_one_entry(first):
    # One object in 512 hashes to its own home.  When another callable sharing
    # that home came in, it had nowhere to move: it was evicted and added to
    # the pool again (the old-slot case above failed so, in some heap layouts).
    made = [types.FunctionType(_one.__code__, globals(), "_one") for _ in range(20000)]
    by_home = {}
    for f in made:
        by_home.setdefault(_home(f), []).append(f)
    pair = next(((f, g) for f in made if _hashed(f) == _home(f)
                 for g in by_home[_home(f)] if g is not f), None)
    if pair is None:
        pytest.skip("no callable among 20,000 hashes to its home and shares it")
    fa, fb = pair
    assert _away(fa) != _home(fa)
    _assert_one_entry_each(*((fa, fb) if first == "hashes-home" else (fb, fa)), 300)


def test_three_callables_sharing_a_home_stay_correct():
    # More callables than entries to go to: they may evict each other and the
    # pool grow, but the trace is the general path's and each call's callable
    # is the one called.
    keep = []
    fns = _same_key(_home, 3, keep)
    run = _calls(fns, 200)
    fast, slow = track_both(run, (200,), ReturnHook())
    assert fast.value == slow.value == 600
    assert_same_trace(fast, slow, fewer_events=True)
    pool = fast.trace.pool
    for f in fns:
        assert any(v is f for v in pool)


def test_one_callables_away_entry_is_anothers_home():
    # fa and fb share a home; fb's entry away is fc's home: fa takes the home,
    # fb moves away (onto fc's home), fc takes its home back and so on.  The
    # pool may grow; the trace must stay the general path's.
    keep = [types.FunctionType(_one.__code__, globals(), "_one") for _ in range(6000)]
    by_home = {}
    for f in keep:
        by_home.setdefault(_home(f), []).append(f)
    found = None
    for group in by_home.values():
        for fa in group:
            for fb in group:
                if fb is not fa and _away(fb) != _home(fb) and by_home.get(_away(fb)):
                    found = fa, fb, by_home[_away(fb)][0]
                    break
            if found:
                break
        if found:
            break
    if found is None:
        pytest.skip("no three callables with that address pattern among 6,000 made")
    fa, fb, fc = found
    run = _calls([fa, fb, fc], 200)
    fast, slow = track_both(run, (200,), ReturnHook())
    assert fast.value == slow.value == 600
    assert_same_trace(fast, slow, fewer_events=True)


@pytest.mark.parametrize("fresh", [False, True])
def test_colliding_callables_same_trace_as_general_path(fresh):
    keep = []
    fa, fb = _same_key(_home, 2, keep)
    run = _calls([fa, fb], 300)
    fast, slow = track_both(run, (300,), ReturnHook(), fresh=fresh)
    assert_same_trace(fast, slow, fewer_events=True)


def test_methods_and_globals_sharing_sets():
    # Bound-method captures (`word.lower`) and global captures through the same
    # cache, with colliding globals: the trace matches the general path's.
    keep = []
    fa, fb = _same_key(_home, 2, keep)
    globals()["_callee_m0"], globals()["_callee_m1"] = fa, fb

    def words(items):
        out = []
        for w in items:
            out.append(w.lower() + w.upper())
            _callee_m0()  # noqa: F821 (set above)
            _callee_m1()  # noqa: F821
        return out

    items = [f"Word{i}" for i in range(100)]
    fast, slow = track_both(words, (items,), ReturnHook())
    assert fast.value == words(items)
    assert_same_trace(fast, slow, fewer_events=True)
