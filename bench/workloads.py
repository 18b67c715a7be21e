"""Workloads for the tracer benchmark (``bench/run.py``).

Each workload is a plain Python function together with a factory,
``make_args()``, that builds fresh ``(args, kwargs)`` for every call.  Building
arguments afresh means mutable state -- random number generators above all --
is identical for the untraced and the traced run, so their results can be
compared exactly.

The workloads cover different shapes of program:

``h``      an op-dense arithmetic loop (many tiny operations, no calls);
``fib``    naive recursion (many small Python calls);
``mlp``    a numpy-heavy model whose time is spent in numpy's C code;
``geom``   a "probabilistic model": stochastic recursion driven by an rng;
``words``  mixed everyday Python: lists, dicts, methods, comprehensions, sorting.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

Args = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Workload:
    """A function to benchmark, a factory for its arguments and a result check."""

    name: str
    func: Callable[..., Any]
    make_args: Callable[[], Args]
    same_result: Callable[[Any, Any], bool] = lambda a, b: bool(a == b)
    description: str = ""


# Sizes are chosen so each untraced call takes roughly 5-200 ms on an ordinary
# machine: long enough to time reliably, short enough that traced runs finish.

# --- 1. op-dense loop -------------------------------------------------------

H_N = 80000

def h(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


# --- 2. naive recursion -----------------------------------------------------

FIB_N = 25

def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


# --- 3. numpy-heavy model ---------------------------------------------------

MLP_SIZE = 256
MLP_STEPS = 50


def make_mlp_args() -> Args:
    rng = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(MLP_SIZE)
    x = rng.standard_normal((MLP_SIZE, MLP_SIZE))
    w1 = rng.standard_normal((MLP_SIZE, MLP_SIZE)) * scale
    b1 = rng.standard_normal(MLP_SIZE)
    w2 = rng.standard_normal((MLP_SIZE, MLP_SIZE)) * scale
    b2 = rng.standard_normal(MLP_SIZE)
    return (x, w1, b1, w2, b2, MLP_STEPS), {}


def mlp(x, w1, b1, w2, b2, steps):
    """Feed ``x`` through a 2-layer tanh MLP ``steps`` times."""
    out = x
    for _ in range(steps):
        hidden = np.tanh(out @ w1 + b1)
        out = np.tanh(hidden @ w2 + b2)
    return out


def arrays_match(a, b) -> bool:
    # Tight tolerance rather than exact equality: a BLAS may pick a different
    # kernel path depending on memory alignment, which can change the last bit.
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        np.allclose(a, b, rtol=1e-12, atol=1e-15)
    )


# --- 4. probabilistic model -------------------------------------------------

GEOM_TRIALS = 20000
GEOM_BETA = 0.3


def geom(rng, n, beta):
    """Number of failures before the first success of a Bernoulli(beta)."""
    if rng.random() < beta:
        return n
    return geom(rng, n + 1, beta)


def geom_model(rng, trials, beta):
    return [geom(rng, 0, beta) for _ in range(trials)]


def make_geom_args() -> Args:
    return (random.Random(1), GEOM_TRIALS, GEOM_BETA), {}


# --- 5. mixed everyday Python -----------------------------------------------

WORD_COUNT = 50000
SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "ga"]


def make_words_args() -> Args:
    rng = random.Random(2)
    vocabulary = [
        "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
        for _ in range(300)
    ]
    words = [
        w.upper() if rng.random() < 0.2 else w
        for w in rng.choices(vocabulary, k=WORD_COUNT)
    ]
    return (words,), {}


def word_frequencies(words):
    """Count words case-insensitively; return (word, count) by falling count."""
    counts = {}
    for word in words:
        key = word.lower().strip()
        counts[key] = counts.get(key, 0) + 1
    frequent = [(w, c) for w, c in counts.items() if c > 1]
    frequent.sort(key=lambda item: (-item[1], item[0]))
    return frequent


# --- registry ---------------------------------------------------------------

WORKLOADS: list[Workload] = [
    Workload("h", h, lambda: ((1.0001, H_N), {}),
             description=f"while-loop summing x**i, x=1.0001, n={H_N}"),
    Workload("fib", fib, lambda: ((FIB_N,), {}),
             description=f"naive recursive fibonacci, n={FIB_N}"),
    Workload("mlp", mlp, make_mlp_args, same_result=arrays_match,
             description=f"2-layer MLP forward x{MLP_STEPS}, {MLP_SIZE}x{MLP_SIZE} float64"),
    Workload("geom", geom_model, make_geom_args,
             description=f"stochastic recursion x{GEOM_TRIALS}, beta={GEOM_BETA}"),
    Workload("words", word_frequencies, make_words_args,
             description=f"word frequencies over {WORD_COUNT} words, sorted"),
]

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}
