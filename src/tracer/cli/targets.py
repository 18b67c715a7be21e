"""What the command line traces: a script, a module run as `-m`, or a function called
with JSON arguments; each made into a callable whose recorded call is that code.

A script (or `-m` module) is compiled and its module code object wrapped as a
function over a fresh `__main__` namespace: called, it runs the module-level code
with `__name__ == "__main__"`, and that code is the root call of the trace.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.util
import json
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Target", "TargetError", "script_target", "module_target", "function_target",
           "resolve_object"]


class TargetError(Exception):
    """The command line named something that cannot be run (exit status 2)."""


@dataclass
class Target:
    """A callable to trace, its arguments, and how the process must look while it runs."""

    function: Callable[..., Any]
    description: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    argv: list[str] | None = None     # sys.argv while it runs (None: unchanged)
    path0: str | None = None          # sys.path[0] while it runs (None: unchanged)
    main: types.ModuleType | None = None  # the module installed as __main__ while it runs

    @contextlib.contextmanager
    def running(self):
        """sys.argv, sys.path[0] and sys.modules["__main__"] as `python script.py`
        would have them, restored afterwards."""
        saved_argv, saved_path, saved_main = sys.argv, list(sys.path), sys.modules.get("__main__")
        try:
            if self.argv is not None:
                sys.argv = self.argv
            if self.path0 is not None:
                sys.path[:] = [self.path0] + saved_path[1:]
            if self.main is not None:
                sys.modules["__main__"] = self.main
            yield
        finally:
            sys.argv = saved_argv
            sys.path[:] = saved_path
            if saved_main is not None:
                sys.modules["__main__"] = saved_main


def script_target(path: str, args: list[str]) -> Target:
    """A Python script, as `python path args...` runs it."""
    if not os.path.exists(path):
        raise TargetError(f"can't open file {path!r}: no such file")
    if os.path.isdir(path):
        raise TargetError(f"{path!r} is a directory; give a .py script, or -m package to run "
                          "a package's __main__")
    full = os.path.abspath(path)
    try:
        with open(full, "rb") as f:
            source = f.read()
    except OSError as err:
        raise TargetError(f"can't open file {path!r}: {err.strerror}") from err
    code = _compile(source, full)
    module = _main_module(full, code, spec=None)
    return Target(_module_function(code, module), f"script {path}", argv=[path, *args],
                  path0=os.path.dirname(full), main=module)


def module_target(name: str, args: list[str]) -> Target:
    """A module (or a package's `__main__`), as `python -m name args...` runs it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as err:  # a parent package is missing or broken
        raise TargetError(f"cannot find module {name!r}: {type(err).__name__}: {err}") from err
    if spec is None:
        raise TargetError(f"no module named {name!r} (is it installed, and is the current "
                          "directory or its package on sys.path?)")
    if spec.submodule_search_locations is not None:  # a package: run its __main__
        main_name = f"{name}.__main__"
        spec = importlib.util.find_spec(main_name)
        if spec is None:
            raise TargetError(f"{name!r} is a package and cannot be run directly: it has no "
                              "__main__ module")
    try:
        code = spec.loader.get_code(spec.name) if spec.loader is not None else None
    except SyntaxError as err:
        raise TargetError(_syntax_text(err)) from err
    if code is None:
        raise TargetError(f"module {spec.name!r} has no Python code to run ({spec.origin})")
    module = _main_module(spec.origin, code, spec=spec)
    return Target(_module_function(code, module), f"module {spec.name}",
                  argv=[spec.origin or name, *args], path0=os.getcwd(), main=module)


def function_target(target: str, args_json: str | None, kwargs_json: str | None) -> Target:
    """`package.module:function` (or `:Class.method`) called with JSON arguments."""
    function = resolve_object(target, "function")
    if not callable(function):
        raise TargetError(f"{target} is a {type(function).__name__}, not something to call")
    args = _json(args_json, list, "--args", "a JSON list of positional arguments, e.g. '[1, 0.5]'")
    kwargs = _json(kwargs_json, dict, "--kwargs", "a JSON object of keyword arguments, "
                   "e.g. '{\"n\": 3}'")
    return Target(function, f"call {target}", args=tuple(args or ()), kwargs=dict(kwargs or {}),
                  path0=os.getcwd())


def resolve_object(target: str, what: str):
    """The object `package.module:name.attr` names (imported, not traced)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise TargetError(f"expected package.module:{what}, got {target!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` finds modules of the current directory
    try:
        obj = importlib.import_module(module_name)
    except ImportError as err:
        raise TargetError(f"cannot import module {module_name!r}: {type(err).__name__}: {err}") from err
    except SyntaxError as err:
        raise TargetError(_syntax_text(err)) from err
    except Exception as err:
        raise TargetError(f"importing module {module_name!r} raised {type(err).__name__}: {err}") from err
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"module {module_name!r} has no {what} {attr!r} "
                              f"(no attribute {part!r})") from None
    return obj


def _json(text: str | None, kind: type, option: str, expected: str):
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise TargetError(f"{option} is not valid JSON ({err}); expected {expected}") from err
    if not isinstance(value, kind):
        raise TargetError(f"{option} must be {expected}, got JSON {type(value).__name__}")
    return value


def _compile(source: bytes, filename: str):
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as err:
        raise TargetError(_syntax_text(err) if isinstance(err, SyntaxError) else
                          f"cannot compile {filename}: {err}") from err


def _syntax_text(err: SyntaxError) -> str:
    where = f"{err.filename}, line {err.lineno}" if err.filename else "the code"
    return f"SyntaxError in {where}: {err.msg}"


def _main_module(origin: str | None, code, spec) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__dict__.update({
        "__file__": origin, "__builtins__": builtins, "__spec__": spec,
        "__loader__": spec.loader if spec is not None else None,
        "__package__": spec.parent if spec is not None else None,
        "__cached__": None,
    })
    return module


def _module_function(code, module: types.ModuleType):
    """The module code object as a function: a function whose code is not
    CO_OPTIMIZED runs with its globals as its locals, which is how module-level code
    runs (STORE_NAME writes the module's namespace)."""
    return types.FunctionType(code, module.__dict__, "<module>")
