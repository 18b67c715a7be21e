"""`grad`, `value_and_grad`, `vjp`: reverse-mode derivatives of unmodified Python.

The first call traces the function into a tape (callables with rules kept
primitive), analyses it (tracer.ad.program) and sweeps it with the values the
trace recorded (tracer.ad.sweep: the function is not run again).  Later calls with
arguments of the same types and shapes re-run the cached path's ops, checking its
guards; a path taken `COMPILE_AFTER` times is then compiled into generated Python
code for its forward ops and reverse sweep.  When a guard fails (the new arguments
take another branch, loop count or random choice), the function is traced again
and the new path cached too (up to `MAX_PATHS` per signature, the most recently
used tried first).
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from .. import api as _api
from ..api import track
from ..context import Context
from ..tapes.common import K_NESTED, K_PRIM
from ..tapes import Tape
from ..tapes.guards import GuardError
from ..analysis.identitycache import IdentityCache
from ..analysis.ir import ir as ir_of
from ..tapes.callbacks import close_generator
from ..tapes.helpers import make_closure, yield_from_iter
from ..tapes.ops import Call, Guard, Input, Where
from .. import callables as tops
from . import adjoints
from .errors import NoRuleError
from .program import build
from .rules import lookup, python_primitives, rules_version

__all__ = ["grad", "value_and_grad", "vjp", "vjp_positions", "MAX_PATHS", "COMPILE_AFTER"]

MAX_PATHS = 8
COMPILE_AFTER = 2  # a path is compiled when it is taken this many times after its trace


def ad_context() -> Context | None:
    """The tracing context: every Python callable with a rule is primitive, and so
    is making a gradient program (a gradient taken inside a differentiated call)."""
    ctx = Context(primitives=python_primitives() + [prepare, prepare_vjp])
    ctx.follows_ad_code = True    # a gradient taken inside f runs tracer.ad's code there
    return ctx


def prepare(f, positions, args, kwargs):
    """The compiled gradient program of `f` (its `positions`) for a call with
    `args` and `kwargs` (the call `f` makes, a partial unwrapped), traced if no
    cached path holds.  Kept primitive while tracing: an outer gradient
    differentiates the program's code, not its making (nor the cache's branches).
    Its paths are kept with `f`: `grad(f)` written inside a differentiated function
    is a new wrapper on every call."""
    fn, _, _, shift = _unpartial(f, (), {})
    cache = _paths_of(f)
    runner = cache.get(positions)
    if runner is None:
        runner = cache[positions] = _Paths(fn, tuple([p + shift for p in positions]))
    prog = runner.run(args, kwargs)[2]
    prog.compile()
    return prog


def _locator(root):
    """`locate(op)`: where the trace under `root` recorded the call that made op's
    value (its code, offset and line), for error messages; None if not found."""
    def locate(op):
        t = root.trace
        cols = t.columns()
        codes = t.codes
        for row in range(len(t) - 1, 0, -1):
            if cols["kind"][row] not in (K_PRIM, K_NESTED) or t.value(row) is not op.value:
                continue
            refs = t.refs(row)
            callee = refs[0][1] if refs and not isinstance(refs[0], int) else None
            if callee is not None and callable(callee) and callee is not op.fn:
                continue
            code = codes[cols["code"][row]]
            off = int(cols["offset"][row])
            line = ir_of(code).layout.by_offset[off].line if off >= 0 else None
            return Where(code, off, line)
        return None
    return locate


def trace(f, args, kwargs):
    """`(value, tape, literals)`: `f(*args, **kwargs)` traced with the rules' context,
    its tape, and the ids of the float constants of the code that ran."""
    root = track(f, *args, ctx=ad_context(), **kwargs)
    tape = Tape.from_trace(root, None, callbacks=True)
    for op in tape.ops:
        if type(op) is Call and type(op.fn) is Input and op.fn.position == 0 \
                and lookup(op.fn.value) is not None:
            # The function itself is a primitive with a rule (np.sin, operator.mul):
            # its one op is differentiated by that rule.
            op.fn = op.fn.value
    _drop_inlined_iterables(tape)
    _fix_recording_tests(tape)
    literals = frozenset(id(c) for code in root.trace.codes for c in code.co_consts
                         if type(c) is float)
    tape.locate = _locator(root)
    return root.value, tape, literals


def _under_gradient_trace():
    """What `tracer.api.recording()` is on a gradient's tape: not None.  The call ran
    under this gradient's trace (a gradient taken inside it chose the code an outer
    gradient follows), and a replay of the path is that same path."""
    return True


def _fix_recording_tests(tape) -> None:
    """`recording()` tested by tracer.ad's own code (value_and_grad, adjoint sums)
    inside the differentiated call gives not-None on every replay of the path: a
    replay does not record, yet must run the code the trace followed (else its guard
    fails on every call and the path is traced again: grad(grad(f)) re-traced on
    each call)."""
    for op in tape.ops:
        if type(op) is Call and op.fn is _api.recording and not op.args and not op.kwargs:
            if all(type(u) is Guard and u.test == "none" for u in tape.users(op)):
                op.fn = _under_gradient_trace
                op.value = True


def _drop_inlined_iterables(tape) -> None:
    """Delete the generators, maps, filters, zips and enumerates whose iteration the
    tape inlined (and the ops that made their functions, if nothing else uses them):
    the gradient's code runs the inlined items only, so a gradient of it (higher
    order) does not meet a generator made from a differentiated value.  One may feed
    another (`zip(gen, ...)`, a generator expression over `iter(map(...))`): repeated
    until none is left that only such ops use."""
    work = list(tape.inlined_iterables)
    dropped = True
    while dropped:
        dropped = False
        for op in work:
            if op not in tape:
                continue
            for u in tape.users(op):
                if type(u) is Call and (u.fn is close_generator
                                        or u.fn in (iter, yield_from_iter)
                                        and not tape.users(u) and u is not tape.result):
                    tape.delete(u)  # closing it, a for loop's iter() of it, `yield from`'s
            if tape.users(op) or op is tape.result:
                continue
            tape.delete(op)
            dropped = True
            for r in op.refs():
                if type(r) is Call and r.fn in (make_closure, tops.build_tuple):
                    work.append(r)
    tape.inlined_iterables = []


def _signature(v):
    """What a cached program assumes of an argument: its type, an array's shape."""
    t = type(v)
    if t is float or t is int:
        return t
    if t is np.ndarray:
        return (t, v.shape, v.dtype.str)
    if t is tuple or t is list:
        return (t, tuple(_signature(x) for x in v))
    if t is dict:
        return (t, tuple((k, _signature(x)) for k, x in v.items()))
    return t


def _input_ops(tape, positions):
    """The Input ops of the tape for the caller's positional arguments `positions`,
    and for each the item of a `*args` parameter it is (None: its own parameter)."""
    func = tape.signature_of
    shift = 1
    if isinstance(func, types.MethodType):
        shift = 2  # parameter 1 is self
    by_pos = {op.position: op for op in tape.ops if type(op) is Input}
    out, items = [], []
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    for p in positions:
        item = None
        k = p + shift
        if code is not None and k - 1 >= code.co_argcount:
            if not code.co_flags & inspect.CO_VARARGS:
                raise TypeError(f"argnums {p}: {tape.func.__qualname__} has only "
                                f"{code.co_argcount - shift + 1} positional parameters to "
                                "differentiate with respect to")
            # An item of the *args tuple: the parameter after the named ones.
            item = k - 1 - code.co_argcount
            k = code.co_argcount + code.co_kwonlyargcount + 1
        op = by_pos.get(k)
        if op is None:
            raise TypeError(f"argnums {p}: no such positional argument")
        out.append(op)
        items.append(item)
    return out, items


def _build(tape, positions, literals):
    ops, items = _input_ops(tape, positions)
    prog = build(tape, ops, vjp_positions, literals, getattr(tape, "locate", None))
    prog.items = items
    return prog


def _check_argument(v, p):
    if isinstance(v, (bool, int, np.integer, np.bool_)) or (
            isinstance(v, np.ndarray) and v.dtype.kind not in "fc"):
        raise TypeError(f"cannot differentiate with respect to argument {p}: it is "
                        f"{type(v).__name__ if not isinstance(v, np.ndarray) else 'an array of ' + str(v.dtype)}"
                        "; integers and booleans are not differentiated (pass a float)")


class _Paths:
    """The gradient programs of one function, by argument signature, one per path."""

    __no_adjoint__ = True  # holds programs, no differentiated value (higher order)

    def __init__(self, f, positions):
        self.f = f
        self.positions = positions
        self.cache: dict = {}
        self.traces = 0

    def run(self, args, kwargs):
        """(value, saved values, program) for a call with `args`, `kwargs`."""
        try:
            key = (tuple(_signature(a) for a in args), tuple(kwargs), rules_version())
            hash(key)
        except TypeError:
            key = None
        progs = self.cache.get(key) if key is not None else None
        if progs:
            for k, prog in enumerate(progs):
                try:
                    value, state = prog.forward(args, kwargs)
                except GuardError:
                    continue
                if k:
                    progs.insert(0, progs.pop(k))
                prog.hits += 1
                if prog.hits == COMPILE_AFTER:
                    prog.compile()  # this path is being reused: generate its code
                return value, state, prog
        value, tape, literals = trace(self.f, args, kwargs)
        self.traces += 1
        prog = _build(tape, self.positions, literals)
        if key is not None:
            progs = self.cache.setdefault(key, [])
            progs.insert(0, prog)
            del progs[MAX_PATHS:]
        value, state = prog.first_state(value, args, kwargs)
        return value, state, prog


def _positions(argnums, nargs):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for p in nums:
        if not isinstance(p, int):
            raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -nargs <= p < nargs:
            raise TypeError(f"argnums {p} is out of range: the call passed {nargs} "
                            "positional arguments")
    return single, tuple(p % nargs for p in nums)


def _scalar_seed(value, f):
    if isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, bool):
        return 1.0
    if isinstance(value, np.ndarray) and value.size == 1:
        return np.ones_like(value, dtype=float)
    raise TypeError(f"grad needs {getattr(f, '__qualname__', f)} to return a float "
                    f"(a scalar); it returned {type(value).__name__}"
                    f"{' of shape ' + str(value.shape) if isinstance(value, np.ndarray) else ''}"
                    "; use tracer.vjp for other outputs")


def value_and_grad(f, argnums=0):
    """A function returning `(f(*args), gradient)`; the gradient is with respect to
    argument `argnums` (an int), or a tuple of gradients for a tuple of argnums.

    Arguments may be floats, numpy float arrays, and tuples, lists and dicts of
    them; each gradient has its argument's structure.  `f` must return a scalar.
    """
    if not callable(f):
        raise TypeError(f"value_and_grad needs a callable, got {f!r}")
    paths: dict = {}

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        single, positions = _positions(argnums, len(args))
        for p in positions:
            _check_argument(args[p], p)
        fn, call_args, call_kwargs, shift = _unpartial(f, args, kwargs)
        if _api.recording() is not None:
            # An outer track (a gradient of this gradient) records this call: the
            # program is found or made where it does not look (a primitive), then
            # its generated forward and backward code run as plain Python it follows.
            prog = prepare(f, positions, call_args, call_kwargs)
            value, saved = prog.forward(call_args, call_kwargs)
        else:
            runner = paths.get(positions)
            if runner is None:
                runner = paths[positions] = _Paths(fn, tuple([p + shift for p in positions]))
            value, saved, prog = runner.run(call_args, call_kwargs)
        raw = prog.backward(saved, _scalar_seed(value, f))
        # A list, not a generator: an outer gradient follows comprehensions.
        grads = [adjoints.to_gradient(g, args[p]) for g, p in zip(raw, positions)]
        return value, (grads[0] if single else tuple(grads))

    value_and_grad_f.paths = paths  # type: ignore[attr-defined]
    return value_and_grad_f


# By function object, weakly and without a callback: a WeakKeyDictionary's callback would run inside
# whatever program tracer is recording when the collector frees a function.
_PATHS: IdentityCache = IdentityCache()


def _paths_of(f) -> dict:
    """The traced paths of `f` by argnums while an outer gradient records, shared by
    every `grad(f)` of the same function object (`grad(g)` written inside a
    differentiated function makes a new wrapper on each call; its paths stay).
    Kept as long as `f` lives."""
    if isinstance(f, types.FunctionType):
        paths = _PATHS.get(f)
        if paths is None:
            paths = _PATHS[f] = {}
        return paths
    return {}


def _unpartial(f, args, kwargs):
    """`(function, args, kwargs, shift)` of a call of `f`: a functools.partial is
    differentiated as the call of its function it makes (its bound arguments first:
    the caller's argument p is the function's p + shift)."""
    if type(f) is not functools.partial:
        return f, args, kwargs, 0
    inner, pre, kw, _ = _unpartial(f.func, f.args, f.keywords)
    return inner, tuple(pre) + tuple(args), {**kw, **kwargs}, len(pre)


def grad(f, argnums=0):
    """A function returning the gradient of scalar-valued `f` with respect to argument
    `argnums` (see value_and_grad).  The gradient follows the path this call takes
    (branches, loops, recursion, random choices as constants)."""
    vg = value_and_grad(f, argnums)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    grad_f.paths = vg.paths  # type: ignore[attr-defined]
    return grad_f


def vjp(f, *args, **kwargs):
    """`(f(*args, **kwargs), pullback)`: `pullback(g)` returns the adjoint of every
    positional argument for the output adjoint `g` (None for an argument that is not
    differentiable: an int, a bool, a string)."""
    positions = tuple(p for p, a in enumerate(args) if _differentiable_argument(a))
    value, pb = vjp_positions(f, args, positions, kwargs)

    def pullback(g):
        adj = pb(g)
        # Built by a comprehension, not stored into: an outer gradient follows it.
        return tuple([adjoints.to_gradient(adj[positions.index(i)], a) if i in positions
                      else None for i, a in enumerate(args)])

    return value, pullback


def _differentiable_argument(a) -> bool:
    """Whether `a` holds a float anywhere (a list of ints, `[1, 2]`, does not)."""
    if isinstance(a, (list, tuple)):
        return any(_differentiable_argument(x) for x in a)
    if isinstance(a, dict):
        return any(_differentiable_argument(x) for x in a.values())
    try:
        _check_argument(a, 0)
    except TypeError:
        return False
    return adjoints.is_differentiable(a)


def vjp_positions(f, args, positions, kwargs=None):
    """`(value, pullback)` with `pullback(g)` the raw adjoints of `args[p]` for p in
    `positions` (the nested calls of a gradient program use this)."""
    kwargs = kwargs or {}
    if _api.recording() is not None:  # an outer gradient records this: see value_and_grad
        prog = prepare_vjp(f, args, positions, kwargs)
        value, state = prog.forward(args, kwargs)
    else:
        value, prog = _vjp_program(f, args, positions, kwargs)
        value, state = prog.first_state(value, args, kwargs)

    def pullback(g):
        return prog.backward(state, g)

    return value, pullback


def _vjp_program(f, args, positions, kwargs):
    """(value, program) of one traced call of `f` for the adjoints of `positions`."""
    value, tape, literals = trace(f, args, kwargs)
    if tape.signature_of is None and len(tape.ops) and tape.result is not None \
            and type(tape.result) is not Input and tape.result.fn is tape.ops[0]:
        # The call itself is one op (a C function, or Python code entered from C):
        # there is nothing inside to differentiate.
        raise NoRuleError(f)
    return value, _build(tape, positions, literals)


def prepare_vjp(f, args, positions, kwargs):
    """vjp_positions' compiled program, made in a primitive call (see `prepare`)."""
    prog = _vjp_program(f, args, positions, kwargs)[1]
    prog.compile()
    return prog
