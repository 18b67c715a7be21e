"""`python -m tracer`: trace a script, a module or a function from the command line,
look at saved traces and compare two of them (`diff`: node by node; `compare`: their
work counts).

Exit status: 0 done (for `diff` and `compare`: no difference); 1 the traced program
raised (its traceback is printed) or `diff`/`compare` found differences; 2 a bad command line, a missing
script, a module or function that cannot be imported, a file that cannot be read or
written; 3 tracer itself failed (a context hook raised); a traced program's
`sys.exit(n)` exits with n.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback

from .. import api
from ..context import VALUE_POLICIES, Context, with_max_nodes, with_timing, with_values
from ..export.dot import GraphvizNotFound, render
from ..export.summary import summary
from ..compare.diff import diff, format_diff
from ..views.nodes import Node
from ..views.show import format_node
from .progress import Progress
from .targets import Target, TargetError, function_target, module_target, resolve_object, script_target

__all__ = ["main"]

OK, RAISED, USAGE, TRACER_FAILED = 0, 1, 2, 3
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CommandError(Exception):
    """A user error the command reports in one line (exit status 2)."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    options = parser.parse_args(argv)
    if options.command is None:
        parser.print_help(sys.stderr)
        return USAGE
    try:
        return options.handler(options)
    except (CommandError, TargetError) as err:
        _error(str(err))
        return USAGE
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as a command-line tool does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return RAISED


# -- the parser -----------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tracer",
        description="Record what a Python program did (tracer), look at saved traces, "
                    "compare two.",
        epilog="exit status: 0 done (diff: same); 1 the traced program raised, or diff found "
               "differences; 2 bad command line, script, module, function or file; 3 tracer "
               "failed; a traced sys.exit(n) exits with n",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run", help="trace a script or a module (-m) and print what it did",
        description="Trace a script (python -m tracer run script.py args...) or a module "
                    "(python -m tracer run -m package.module args...): its module-level "
                    "code is the root call.  Options go before the script.")
    run.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE ...",
                     help="run a module (or a package's __main__) as python -m does; "
                          "what follows it is the module's arguments")
    _trace_options(run)
    run.add_argument("script", nargs="?", help="the script to run (unless -m)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script or module")
    run.set_defaults(handler=_run)

    call = commands.add_parser(
        "call", help="trace a call of package.module:function with JSON arguments",
        description="Trace package.module:function(*args, **kwargs).")
    call.add_argument("target", metavar="MODULE:FUNCTION")
    call.add_argument("--args", metavar="JSON", help="positional arguments, a JSON list")
    call.add_argument("--kwargs", metavar="JSON", help="keyword arguments, a JSON object")
    _trace_options(call)
    call.set_defaults(handler=_call)

    show = commands.add_parser("show", help="print a saved trace",
                               description="Print the summary and the top levels of a saved trace.")
    show.add_argument("file", help="a trace saved with --save or tracer.save")
    show.add_argument("--node", metavar="PATH",
                      help="start at this node: child positions from the root, e.g. @8/@8 (or 8/8)")
    _print_options(show)
    show.set_defaults(handler=_show)

    summarised = commands.add_parser(
        "summary", help="print the summary of a saved trace (with its time table if timed)",
        description="Nodes by kind, recorded calls by function, primitive calls, and for "
                    "a trace recorded with --timing the time by function (calls, total, "
                    "self, per call).")
    summarised.add_argument("file", help="a trace saved with --save or tracer.save")
    summarised.add_argument("--node", metavar="PATH",
                            help="summarise this node: child positions from the root, e.g. @8/@8")
    summarised.set_defaults(handler=_summary)

    compare = commands.add_parser("diff", help="compare two saved traces",
                                  description="Where two saved runs diverge, which values differ, "
                                              "which calls were added or removed.")
    compare.add_argument("a", help="the first saved trace")
    compare.add_argument("b", help="the second saved trace")
    compare.add_argument("--rel-tol", type=float, default=1e-9,
                         help="relative tolerance for floats (default 1e-9)")
    compare.add_argument("--abs-tol", type=float, default=0.0,
                         help="absolute tolerance for floats (default 0)")
    compare.add_argument("--show", type=_count, default=10, metavar="N",
                         help="list at most N changes of each kind (default 10)")
    compare.set_defaults(handler=_diff)

    counted = commands.add_parser(
        "compare", help="compare the work counts of two saved traces or sets of runs",
        description="What work changed between A and B, by callee, function or line, with "
                    "relative changes (like pyperf compare_to for times).  A and B: saved "
                    "traces, folders of saved traces (sets of runs: compared per run), or "
                    "JSON counts (--json output of tracer.Counts.as_dict).")
    counted.add_argument("a", help="the first trace, folder or counts file")
    counted.add_argument("b", help="the second trace, folder or counts file")
    counted.add_argument("--by", choices=("callee", "function", "line"), default="callee",
                         help="count calls by callee, or nodes by function or by line "
                              "(default callee)")
    counted.add_argument("--threshold", type=float, default=0.0, metavar="FRACTION",
                         help="report only relative changes above this (0.05 = 5%%; "
                              "default 0: every change)")
    counted.add_argument("--json", action="store_true", help="print the comparison as JSON")
    counted.add_argument("--show", type=_count, default=20, metavar="N",
                         help="list at most N changed names (default 20)")
    counted.set_defaults(handler=_compare)
    return parser


def _trace_options(p: argparse.ArgumentParser) -> None:
    _print_options(p)
    p.add_argument("--save", metavar="FILE", help="save the trace (FILE.parquet, or FILE.arrow for Arrow IPC), also when the program raised")
    p.add_argument("--dot", metavar="FILE",
                   help="draw the top --levels as a picture (.svg, .png, .pdf need Graphviz; .dot is text)")
    p.add_argument("--context", metavar="MODULE:CLASS",
                   help="trace with this tracer.Context subclass (or instance)")
    p.add_argument("--values", choices=VALUE_POLICIES, default="keep",
                   help="what the trace keeps of values: keep (the objects, default), none "
                        "(structure and edges only), summary (type, shape, a short text), "
                        "weak (immutable values; others while the program keeps them)")
    p.add_argument("--timing", action="store_true",
                   help="time each recorded call (Context(timing=True)): the summary gets "
                        "a table of calls, total, self and per-call time by function")
    p.add_argument("--max-nodes", type=_positive, default=None, metavar="N",
                   help="stop recording once the trace outgrows N nodes (32 bytes each, "
                        "plus the values kept); the program runs on untraced to its end")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="live progress on stderr: auto = only when stderr is a terminal")


def _print_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--levels", type=_count, default=2, metavar="N",
                   help="print (and draw) N levels of calls (default 2)")
    p.add_argument("--lines", type=_count, default=60, metavar="N",
                   help="print at most N lines of the trace, 0 for all (default 60)")
    p.add_argument("--no-summary", dest="summary", action="store_false",
                   help="leave out the summary table")
    p.add_argument("--chrome", metavar="FILE.json",
                   help="write the calls as Chrome trace-event JSON (open it in "
                        "ui.perfetto.dev or speedscope): timed with --timing, else with "
                        "synthetic times (nodes)")


def _positive(text: str) -> int:
    value = _count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected 1 or more, got 0")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


# -- run and call ------------------------------------------------------------------------

def _run(options) -> int:
    if options.module is not None:
        if not options.module:
            raise CommandError("-m needs a module name: python -m tracer run -m package.module")
        if options.script is not None:
            raise CommandError("give a script or -m MODULE, not both (options go before either)")
        target = module_target(options.module[0], options.module[1:])
    elif options.script is None:
        raise CommandError("run needs a script (python -m tracer run script.py) or -m MODULE")
    else:
        target = script_target(options.script, options.args)
    return _trace(target, options)


def _call(options) -> int:
    return _trace(function_target(options.target, options.args, options.kwargs), options)


def _trace(target: Target, options) -> int:
    ctx = _context(options.context) if options.context else None
    if getattr(options, "values", "keep") != "keep":
        ctx = with_values(ctx, options.values)
    if options.timing:
        ctx = with_timing(ctx)
    if options.max_nodes is not None:
        ctx = with_max_nodes(ctx, options.max_nodes)
    if options.chrome:
        _check_writable(options.chrome)
    if options.save:
        _check_writable(options.save)
        _require_save()
        _check_format(options.save)
    enabled = options.progress == "always" or (options.progress == "auto" and sys.stderr.isatty())
    status, failure, stopped = OK, None, False
    with _stdout_kept(), target.running(), Progress(sys.stderr, enabled):
        try:
            root = api.track(target.function, *target.args, ctx=ctx, **target.kwargs)
        except SystemExit as exc:
            root, status = api.last_trace(), _exit_status(exc.code)
        except KeyboardInterrupt:
            root, status, failure = api.last_trace(), 130, "interrupted"
        except api.TraceLimitError as exc:
            # The program ran to its end; the trace holds its first nodes.
            root, status, stopped = api.last_trace(), TRACER_FAILED, True
            failure = (f"tracer: recording stopped at {len(root.trace):,} nodes (--max-nodes "
                       f"{options.max_nodes:,}); {target.description} ran on untraced to its end")
            if isinstance(exc.exception, SystemExit):
                status = _exit_status(exc.exception.code)
            elif exc.exception is not None:
                status = RAISED
                failure += "\n" + _program_traceback(exc.exception)
        except api.TrackingError as exc:
            root, status = api.last_trace(), TRACER_FAILED
            failure = f"tracer: {exc}"
        except BaseException as exc:  # the traced program's own exception
            root, status = api.last_trace(), RAISED
            failure = _program_traceback(exc)
    sys.stdout.flush()
    if failure:
        sys.stderr.write(failure if failure.endswith("\n") else failure + "\n")
        sys.stderr.flush()
    if root is None:
        return status
    if stopped:
        print(f"(the trace below is partial: its first {len(root.trace):,} nodes, --max-nodes)")
    elif status != OK:
        print(f"(the trace below is partial: {target.description} "
              f"{'exited' if failure is None else 'did not finish'})")
    save_status = _save(root, options.save) if options.save else OK
    _print_trace(root, options)
    dot_status = _draw(root, options.dot, options.levels) if options.dot else OK
    chrome_status = _chrome(root, options.chrome) if options.chrome else OK
    return status if status != OK else max(save_status, dot_status, chrome_status)


def _program_traceback(exc: BaseException) -> str:
    """The traced program's exception as Python prints it, tracer's frames left out."""
    return "".join(traceback.format_exception(exc.__class__, exc, _user_frames(exc.__traceback__)))


@contextlib.contextmanager
def _stdout_kept():
    """Give the report a stdout even if the traced program closed sys.stdout (as
    `json.tool` does): a duplicate of file descriptor 1 is kept while it runs."""
    try:
        fd = os.dup(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        if sys.stdout.closed:
            sys.stdout = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")
        else:
            os.close(fd)


def _context(spec: str) -> Context:
    obj = resolve_object(spec, "context class")
    if isinstance(obj, type) and issubclass(obj, Context):
        try:
            return obj()
        except TypeError as err:
            raise CommandError(f"cannot make {spec}() without arguments: {err}; give a "
                               "module-level instance of it instead") from err
    if isinstance(obj, Context):
        return obj
    raise CommandError(f"{spec} is not a tracer.Context subclass or instance "
                       f"(it is a {type(obj).__name__})")


def _exit_status(code) -> int:
    # As the interpreter does: None is 0, an int is itself, anything else is printed, 1.
    if code is None:
        return OK
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return RAISED


def _user_frames(tb):
    """The traceback from the first frame outside tracer: the program's own frames."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep):
        tb = tb.tb_next
    return tb


def _check_writable(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CommandError(f"cannot write {path!r}: folder {folder!r} does not exist")


def _check_format(path: str) -> None:
    """Refuse a --save name whose suffix names no trace format, before the run."""
    from ..persist.parquet import file_format
    try:
        file_format(path, None)
    except ValueError as err:
        raise CommandError(f"--save: {err}") from None


def _require_save():
    import tracer
    save = getattr(tracer, "save", None)
    if save is None:
        raise CommandError("--save needs tracer.save (saving traces to Parquet), which this "
                           "tracer does not have")
    return save


def _save(root: Node, path: str) -> int:
    try:
        _require_save()(root, path)
    except (OSError, ImportError, ValueError, TypeError) as err:
        _error(f"could not save the trace to {path!r}: {type(err).__name__}: {err}")
        return USAGE
    print(f"saved {len(root.trace):,} nodes to {path}")
    return OK


def _draw(root: Node, path: str, levels: int) -> int:
    try:
        render(root, path, levels=max(levels, 1))
    except (GraphvizNotFound, ValueError, RuntimeError, OSError) as err:
        _error(f"could not draw {path!r}: {err}")
        return USAGE
    print(f"drew {path}")
    return OK


def _chrome(root: Node, path: str) -> int:
    from ..export.chrome import write
    try:
        write(root, path)
    except OSError as err:
        _error(f"could not write {path!r}: {err}")
        return USAGE
    print(f"wrote the calls as Chrome trace-event JSON to {path}")
    return OK


# -- show, summary and diff ------------------------------------------------------------------

def _show(options) -> int:
    root = _load(options.file)
    node = _find(root, options.node) if options.node else root
    if options.chrome:
        _check_writable(options.chrome)
    _print_trace(node, options)
    return _chrome(node, options.chrome) if options.chrome else OK


def _summary(options) -> int:
    root = _load(options.file)
    node = _find(root, options.node) if options.node else root
    print(summary(node))
    return OK


def _diff(options) -> int:
    a, b = _load(options.a), _load(options.b)
    d = diff(a, b, rel_tol=options.rel_tol, abs_tol=options.abs_tol)
    print(format_diff(d, show=options.show))
    return OK if d.same else RAISED


def _compare(options) -> int:
    from ..suite.compare import compare_counts, format_comparison
    if options.threshold < 0:
        raise CommandError(f"--threshold must be 0 or more, not {options.threshold}")
    a, b = (_counts_of(p, options.by) for p in (options.a, options.b))
    d = compare_counts(a, b, by=options.by, threshold=options.threshold)
    print(d.to_json() if options.json else format_comparison(d, show=options.show))
    return OK if d.same else RAISED


def _counts_of(path: str, by: str):
    """Work counts of a saved trace, a folder of them, or a JSON counts file."""
    import json

    from ..suite.counts import Counts, counts
    if not os.path.exists(path):
        raise CommandError(f"no such file or folder: {path!r}")
    if path.endswith(".json"):
        try:
            with open(path, encoding="utf-8") as f:
                found = Counts.from_dict(json.load(f))
        except (OSError, ValueError) as err:
            raise CommandError(f"cannot read {path!r} as work counts: {err}") from err
        if found.by != by:
            raise CommandError(f"{path!r} holds counts by {found.by}: use --by {found.by}")
        return found
    if os.path.isdir(path):
        try:
            return counts(path, by)
        except (OSError, ValueError) as err:
            raise CommandError(f"cannot count the traces under {path!r}: {err}") from err
    return counts(_load(path), by)


def _load(path: str) -> Node:
    import tracer
    load = getattr(tracer, "load", None)
    if load is None:
        raise CommandError("reading saved traces needs tracer.load, which this tracer does not have")
    if not os.path.exists(path):
        raise CommandError(f"no such file: {path!r}")
    try:
        return load(path)
    except ImportError as err:
        raise CommandError(f"cannot read {path!r}: {err}") from err
    except Exception as err:
        raise CommandError(f"cannot read {path!r} as a saved trace: {type(err).__name__}: {err}") from err


def _find(root: Node, path: str) -> Node:
    """The node at `@8/@8/@4` (child positions from the root; `8/8/4` also works)."""
    node = root
    for step in [p for p in path.replace(".", "/").split("/") if p]:
        try:
            k = int(step.removeprefix("@"))
        except ValueError:
            raise CommandError(f"bad node path {path!r}: {step!r} is not a position like @8") from None
        if not 0 <= k < len(node):
            raise CommandError(f"bad node path {path!r}: {format_node(node)} has "
                               f"{len(node)} children, no @{k}")
        node = node[k]
    return node


# -- printing ------------------------------------------------------------------------------

def _print_trace(node: Node, options) -> None:
    out = sys.stdout
    if options.summary:
        out.write(str(summary(node)) + "\n\n")
    limit = options.lines or None
    shown = 0
    for depth, n in _walk(node, max(options.levels, 1)):
        if limit is not None and shown == limit:
            rest = sum(1 for _ in _walk(node, max(options.levels, 1))) - shown
            out.write(f"... {rest:,} more lines (--lines 0 prints all, --levels fewer)\n")
            break
        out.write("  " * depth + format_node(n) + "\n")
        shown += 1
    out.flush()


def _walk(node: Node, levels: int):
    """(depth, node) in printing order down to `levels` levels (a stack, not recursion)."""
    stack = [(0, node)]
    while stack:
        depth, n = stack.pop()
        yield depth, n
        if depth + 1 < levels and len(n):
            stack.extend((depth + 1, child) for child in reversed(n.children))


def _error(message: str) -> None:
    sys.stderr.write(f"python -m tracer: error: {message}\n")
    sys.stderr.flush()
