"""Generators, delegation (`yield from`), coroutines (`await`), async generators:
values and edges across resumes, send/throw/close, and code driven by asyncio."""

import asyncio
import io

import tracer
from tracer import callables as ops
from helpers import walk


def _nodes(root, kind=None, fn=None, code_name=None):
    out = []
    for n in walk(root):
        if kind is not None and not isinstance(n, kind):
            continue
        if fn is not None:
            if not isinstance(n, tracer.views.CallNode):
                continue
            f = n.function
            if not isinstance(f, tracer.views.Const) or f.value is not fn:
                continue
        if code_name is not None and (n.code is None or n.code.co_name != code_name):
            continue
        out.append(n)
    return out


def _check_readable(root):
    tracer.validate(root)
    out = io.StringIO()
    tracer.printlevels(root, 100, file=out)
    for n in walk(root):
        if n.parent is not None:
            loc = n.location
            assert loc is not None and loc.offset >= -1, n.row
            if not isinstance(n, tracer.views.ArgumentNode):
                assert loc.offset >= 0, f"row {n.row} has no instruction: {out.getvalue()}"
    return out.getvalue()


def _inner():
    a = yield 1
    return 10 + a


def _outer(x):
    r = yield from _inner()
    y = r * x
    yield y + 1


def _drive(x):
    g = _outer(x)
    out = [next(g)]
    out.append(g.send(5))
    return out


def test_yield_from_records_the_statements_after_the_delegation(traced):
    root = traced(_drive, 3)
    assert root.value == [1, 46]
    _check_readable(root)
    sends = _nodes(root, fn=ops.send)
    assert [s.value for s in sends] == [1, 15]  # yielded 1, then returned 10 + 5
    muls = _nodes(root, fn=__import__("operator").mul, code_name="_outer")
    assert len(muls) == 1 and muls[0].value == 45
    r, x = muls[0].arguments
    assert r == sends[1]  # r is the value the delegation returned
    assert isinstance(x, tracer.views.ArgumentNode) and x.value == 3
    adds = _nodes(root, fn=__import__("operator").add, code_name="_outer")
    assert len(adds) == 1 and adds[0].arguments[0] == muls[0] and adds[0].value == 46
    yields = [n for n in _nodes(root, tracer.views.ReturnNode, code_name="_outer") if n.is_yield]
    assert [y.value for y in yields] == [1, 46]
    assert yields[0].referenced() == [sends[0]]
    assert yields[1].referenced() == [adds[0]]


def test_the_resumed_subgenerator_is_recorded_under_the_send(traced):
    root = traced(_drive, 3)
    sends = _nodes(root, fn=ops.send)
    for s in sends:
        assert isinstance(s, tracer.views.NestedCallNode)
        frames = [c for c in s.children if isinstance(c, tracer.views.NestedCallNode)]
        assert len(frames) == 1 and frames[0].children[0].code.co_name == "_inner"
        assert frames[0].location.offset == s.location.offset
    # The second resume of _inner adds the sent value to 10: the value sent in is a
    # carried argument of that activation, and the addition reads it.
    second = [c for c in sends[1].children if isinstance(c, tracer.views.NestedCallNode)][0]
    add = [c for c in second.children if isinstance(c, tracer.views.PrimitiveCallNode)][0]
    assert add.value == 15
    sent = add.arguments[1]
    assert isinstance(sent, tracer.views.ArgumentNode) and sent.value == 5


def test_resumed_frame_carries_its_stack_values(traced):
    def gen(items):
        for item in items:
            yield item * 2

    def consume(items):
        return list(gen(items))

    root = traced(consume, [1, 2, 3])
    assert root.value == [2, 4, 6]
    _check_readable(root)
    nexts = [n for n in _nodes(root, tracer.views.PrimitiveCallNode, fn=next, code_name="gen")]
    assert [n.value for n in nexts] == [1, 2, 3]
    # After the first activation, FOR_ITER reads the iterator the frame kept across
    # the yield: a carried ArgumentNode of the same activation, not an unknown.
    for n in nexts[1:]:
        (it,) = n.arguments
        assert isinstance(it, tracer.views.ArgumentNode) and it.parent == n.parent
        assert type(it.value).__name__ == "list_iterator"


def test_throw_and_close_are_recorded(traced):
    def gen():
        for i in range(3):
            try:
                yield i
            except ValueError:
                yield -i - 10

    def drive():
        g = gen()
        a = next(g)
        b = g.throw(ValueError("x"))
        c = next(g)
        g.close()
        return a, b, c

    root = traced(drive)
    assert root.value == (0, -10, 1)
    _check_readable(root)
    activations = _nodes(root, tracer.views.NestedCallNode, code_name="drive")
    thrown = [a for a in activations if a.trace.flags(a.row) & tracer._core.FLAGS["frame"]
              and a.parent.function.value == type(gen()).throw]
    assert len(thrown) == 1
    caught = [n for n in walk(thrown[0]) if isinstance(n, tracer.views.SpecialCallNode)
              and isinstance(n.value, ValueError)]
    assert caught, "the exception thrown in is caught by the handler and recorded"
    closed = [a for a in activations if a.parent is not None and isinstance(a.parent, tracer.views.CallNode)
              and a.parent.function.value == type(gen()).close]
    assert len(closed) == 1 and closed[0].raised and isinstance(closed[0].value, GeneratorExit)


def test_generator_expression_consumed_by_c_code(traced):
    def f(n):
        return sum(x * x for x in range(n))

    root = traced(f, 4)
    assert root.value == 14
    _check_readable(root)
    squares = _nodes(root, fn=__import__("operator").mul)
    assert [m.value for m in squares] == [0, 1, 4, 9]
    for m in squares:
        assert m.arguments[0] == m.arguments[1]  # x * x reads the same node twice


async def _leaf(v):
    await asyncio.sleep(0)
    return v * 2


async def _amain(x):
    a = await _leaf(x)
    b = await asyncio.gather(_leaf(1), _leaf(2))
    return a + sum(b)


def _run_async(x):
    return asyncio.run(_amain(x))


def test_await_in_coroutines_driven_by_asyncio(traced):
    root = traced(_run_async, 4)
    assert root.value == 14
    _check_readable(root)
    doubles = _nodes(root, fn=__import__("operator").mul, code_name="_leaf")
    assert sorted(d.value for d in doubles) == [2, 4, 8]
    for d in doubles:
        v = d.arguments[0]
        assert isinstance(v, tracer.views.ArgumentNode) and v.value * 2 == d.value
    finals = _nodes(root, fn=__import__("operator").add, code_name="_amain")
    assert len(finals) == 1 and finals[0].value == 14
    a, total = finals[0].arguments
    assert a.value == 8 and total.value == 6
    # `a` was assigned before the coroutine last resumed: it enters that activation
    # as a carried local; where it was assigned, it is what the SEND of
    # `await _leaf(x)` produced (the value the awaited coroutine returned).
    assert isinstance(a, tracer.views.ArgumentNode) and a.location.stmt == "a"
    stores = [s for s in _nodes(root, fn=ops.send, code_name="_amain") if s.value == 8]
    assert len(stores) == 1


async def _agen(n):
    for i in range(n):
        yield i * 3
        await asyncio.sleep(0)


class _Resource:
    def __init__(self, log):
        self.log = log

    async def __aenter__(self):
        self.log.append("enter")
        return self

    async def __aexit__(self, *exc):
        self.log.append("exit")
        return False


async def _use(n, log):
    total = 0
    async with _Resource(log):
        async for v in _agen(n):
            total += v
    return total


def test_async_for_and_async_with(traced):
    log = []
    root = traced(lambda: asyncio.run(_use(3, log)))
    assert root.value == 9 and log == ["enter", "exit"]
    _check_readable(root)
    adds = _nodes(root, fn=__import__("operator").iadd, code_name="_use")
    assert [a.value for a in adds] == [0, 3, 9]
    triples = _nodes(root, fn=__import__("operator").mul, code_name="_agen")
    assert [t.value for t in triples] == [0, 3, 6]


def test_traced_equals_untraced_for_generator_protocols():
    def protocol():
        def echo():
            received = []
            try:
                while True:
                    v = yield len(received)
                    received.append(v)
            except GeneratorExit:
                received.append("closed")
                raise
            finally:
                received.append("finally")

        g = echo()
        out = [next(g), g.send("a"), g.send("b")]
        g.close()
        return out, g.gi_frame

    expected = protocol()
    root = tracer.track(protocol)
    assert root.value == expected
    _check_readable(root)


async def _ticks(n):
    for i in range(n):
        yield i * 5
    yield -1


async def _first_then_close(log):
    stream = _ticks(2)
    log.append(await anext(stream, -1))   # anext's awaitable returns by StopIteration
    await stream.aclose()
    return len(log)


def test_await_of_an_awaitable_that_returns_by_stop_iteration(traced):
    log = []
    root = traced(lambda: asyncio.run(_first_then_close(log)))
    assert root.value == 1 and log == [0]
    _check_readable(root)
    appends = [n for n in walk(root) if isinstance(n, tracer.views.CallNode)
               and n.code is not None and n.code.co_name == "_first_then_close"
               and isinstance(n.function, tracer.views.Const) and n.function.value is list.append]
    assert len(appends) == 1
    receiver, value = appends[0].arguments
    # The value appended is the SEND's result (what anext's awaitable returned), not
    # an unknown: CPython's RAISE event for that StopIteration is not an exception.
    assert isinstance(value, tracer.views.CallNode) and value.function.value is ops.send
    assert value.value == 0 and not value.raised


def _catching(n):
    try:
        yield n
    except ValueError as e:
        got = e.args[0] * n
        yield got + 1
    return n * 100


def _middle(n):
    r = yield from _catching(n)
    yield r + 7


def _delegating(n):
    r = yield from _middle(n)
    yield r


def _handler_adds(root):
    """The `got + 1` of _catching's handler, wherever it was recorded."""
    return [a for a in _nodes(root, fn=__import__("operator").add)
            if a.code is not None and a.code.co_name == "_catching"]


def test_throw_into_a_generator_suspended_in_yield_from_records_the_delegate(traced):
    # throw() does not run the delegating frames: it passes the exception straight
    # to the innermost generator, whose handler runs under the throw() call.
    def drive(n):
        g = _delegating(n)
        first = next(g)
        caught = g.throw(ValueError(3))
        after = next(g)    # _catching returns 300, _middle yields 307
        return first, caught, after

    root = traced(drive, 100)
    assert root.value == (100, 301, 10007)
    _check_readable(root)
    (add,) = _handler_adds(root)
    assert add.value == 301
    (throw,) = [n for n in walk(root) if isinstance(n, tracer.views.CallNode)
                and n.parent == root and n.value == 301]
    assert add.parent.parent == throw, "the handler runs inside the throw() call"
    got = add.arguments[0]
    assert got.value == 300 and isinstance(got.function, tracer.views.Const)
    # The thrown exception is the value the handler caught.
    caught = [n for n in walk(add.parent) if isinstance(n.value, ValueError)]
    assert caught and all(n.value.args == (3,) for n in caught)


def test_throw_through_yield_from_when_the_delegate_returns_or_reraises(traced):
    def returns(n):
        g = _middle(n)
        next(g)
        g.throw(ValueError(2))          # _catching yields 2n + 1
        return next(g)                  # _catching returns 100n: _middle yields it + 7

    def reraises(n):
        g = _middle(n)
        next(g)
        try:
            g.throw(KeyError(n))       # not caught by _catching: out through _middle
        except KeyError as e:
            return e.args[0] + 1

    root = traced(returns, 5)
    assert root.value == 507
    _check_readable(root)
    assert [a.value for a in _handler_adds(root)] == [11]
    root = traced(reraises, 5)
    assert root.value == 6
    text = _check_readable(root)
    assert "KeyError" in text


def test_close_of_a_delegating_generator_is_recorded(traced):
    closed = []

    def tidy():
        try:
            yield 1
        finally:
            closed.append(len(closed) + 1)

    def outer():
        yield from tidy()

    def drive():
        g = outer()
        next(g)
        g.close()
        return closed[-1]

    root = traced(drive)
    assert root.value == 1
    text = _check_readable(root)
    appends = [n for n in walk(root) if isinstance(n, tracer.views.CallNode)
               and isinstance(n.function, tracer.views.Const) and n.function.value is list.append]
    assert len(appends) == 1 and appends[0].arguments[-1].value == 1, text


def test_cancelling_a_task_records_the_awaiting_coroutines_handler(traced):
    async def sleeper(log):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log.append("cancelled")
            raise

    async def worker(log):
        await sleeper(log)     # cancel() throws through this await into sleeper

    async def main():
        log = []
        task = asyncio.create_task(worker(log))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return log

    root = traced(lambda: asyncio.run(main()))
    assert root.value == ["cancelled"]
    _check_readable(root)
    appends = [n for n in walk(root) if isinstance(n, tracer.views.CallNode)
               and isinstance(n.function, tracer.views.Const)
               and getattr(n.function.value, "__name__", "") == "append"
               and n.arguments and n.arguments[-1].value == "cancelled"]
    assert appends, "the handler of the cancelled coroutine is recorded"
