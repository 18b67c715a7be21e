"""Corpus: Exceptions and context managers."""

import contextlib

from .common import Case, ValidationError


def try_except_else_finally(inputs):
    log = []
    for raw in inputs:
        try:
            value = int(raw)
        except ValueError as exc:
            log.append(("bad", raw, type(exc).__name__))
        except TypeError:
            log.append(("type", repr(raw)))
        else:
            log.append(("ok", value))
        finally:
            log.append("done")
    return log


def finally_on_return_and_raise():
    events = []

    def inner(flag):
        try:
            if flag:
                raise KeyError(flag)
            return "returned"
        finally:
            events.append(("finally", flag))

    result = inner(None)
    try:
        inner("k")
    except KeyError as exc:
        events.append(("caught", exc.args[0]))
    return result, events


def exception_replaced_in_finally():
    try:
        try:
            {}["missing"]
        finally:
            raise ValueError("from finally")
    except ValueError as exc:
        return type(exc.__context__).__name__, str(exc), exc.__context__.args


def exception_chaining_and_hierarchy(records):
    errors = []
    for rec in records:
        try:
            try:
                age = int(rec["age"])
            except (KeyError, ValueError) as exc:
                raise ValidationError("age", type(exc).__name__) from exc
            if age < 0:
                raise ValidationError("age", "negative")
        except ValidationError as exc:
            errors.append((exc.field_name, str(exc), type(exc.__cause__).__name__))
        except Exception as exc:  # noqa: BLE001 - collect anything else
            errors.append(("other", type(exc).__name__))
    return errors


def nested_exception_handlers(values):
    results = []
    for v in values:
        try:
            try:
                results.append(10 // v)
            except ZeroDivisionError:
                results.append("div0")
                raise
            finally:
                results.append("inner-finally")
        except ZeroDivisionError as exc:
            results.append(type(exc).__name__)
        except TypeError as exc:
            results.append(("type", exc.__class__.__name__))
    return results


def exception_groups(items):
    def validate(item):
        problems = []
        if not isinstance(item.get("id"), int):
            problems.append(TypeError("id"))
        if item.get("qty", 0) < 0:
            problems.append(ValueError("qty"))
        if problems:
            raise ExceptionGroup("invalid item", problems)
        return item["id"]

    report = []
    for item in items:
        try:
            report.append(validate(item))
        except* TypeError as group:
            report.append(("type", len(group.exceptions)))
        except* ValueError as group:
            report.append(("value", [str(e) for e in group.exceptions]))
    return report


class RecordingContext:
    def __init__(self, log, name, suppress=()):
        self.log = log
        self.name = name
        self.suppress = suppress

    def __enter__(self):
        self.log.append(f"enter {self.name}")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append(f"exit {self.name} {exc_type.__name__ if exc_type else None}")
        return exc_type is not None and issubclass(exc_type, self.suppress)


@contextlib.contextmanager
def tagged(log, tag):
    log.append(f"<{tag}>")
    try:
        yield tag.upper()
    except KeyError as exc:
        log.append(f"swallowed {exc.args[0]}")
    finally:
        log.append(f"</{tag}>")


def with_statements():
    log = []
    with RecordingContext(log, "outer") as outer, RecordingContext(log, "inner") as inner:
        log.append(f"body {outer.name}/{inner.name}")
    with RecordingContext(log, "suppressing", suppress=(ZeroDivisionError,)):
        log.append("before error")
        _ = 1 / 0
        log.append("never")
    try:
        with RecordingContext(log, "passthrough"):
            raise IndexError("escapes")
    except IndexError:
        log.append("caught outside")
    with tagged(log, "div") as upper:
        log.append(upper)
        with tagged(log, "span"):
            {}["missing-key"]
    with contextlib.suppress(KeyError, ValueError):
        int("not a number")
    with contextlib.ExitStack() as stack:
        for name in ("a", "b"):
            stack.enter_context(RecordingContext(log, name))
        log.append("in exit stack")
    return log


CASES = [
    Case("try_except_else_finally", try_except_else_finally, (("12", "x", None, "-4", 3.7),)),
    Case("finally_on_return_and_raise", finally_on_return_and_raise),
    Case("exception_replaced_in_finally", exception_replaced_in_finally),
    Case("exception_chaining_and_hierarchy", exception_chaining_and_hierarchy,
         (({"age": "31"}, {"age": "abc"}, {}, {"age": -3}, {"age": None}),)),
    Case("nested_exception_handlers", nested_exception_handlers, ((5, 0, "x", -3),)),
    Case("exception_groups", exception_groups,
         (({"id": 1, "qty": 2}, {"id": "x"}, {"id": 2, "qty": -1}, {"id": None, "qty": -5}),)),
    Case("with_statements", with_statements),
]
