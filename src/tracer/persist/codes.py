"""The code table of a saved trace, and the stand-ins for code objects a loaded trace
holds.

A saved code object is described by data only: qualified name, file, first line, a
hash of its bytecode, its IR as text, and (as JSON) the analysis the node views read:
each instruction's name, line, block and stack depth, the IR's statements, and for
each recorded instruction its kind of record, static function and keyword names.
`LoadedCode` answers what the views ask of a code object from that; its
`__tracer_ir__` is a `LoadedIR`, which `tracer.ir` returns for it.  Nothing is
compiled or run: a static function (operator.add, a tracer.callables helper) is
looked up by name only among modules already imported, else shown by its name.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import NamedTuple

import numpy as np

from .. import callables as _callables
from .._core import RecordSem
from ..analysis.bytecode import Handler, nlocalsplus
from ..analysis.identitycache import IdentityCache
from ..analysis.instructions import Rec
from ..analysis.ir import IR, Statement, ir
from ..views.values import SavedText, short_value

__all__ = ["describe_code", "line_table", "LoadedCode", "LoadedIR"]

# Version 2 added what the tape reads (exception handlers, each instruction's next
# offset, the parameter counts); version 1 still loads, without them.
ANALYSIS_VERSION = 2
_READABLE_VERSIONS = (1, 2)
# Where static functions of records live; a saved name is looked up only here.
_STATIC_MODULES = ("builtins", "operator", "_operator", _callables.__name__)


# Described code objects, by identity (equal code objects of different files are
# different codes), while they live: programs saved many times (track_many, a
# benchmark loop) run the same few codes, and describing one (its IR as text and
# JSON) costs more than saving a small trace's columns.
_DESCRIBED: "IdentityCache[dict]" = IdentityCache()


def describe_code(code) -> dict:
    """A code object (or a LoadedCode) as a row of the code table (JSON-able values)."""
    if isinstance(code, LoadedCode):
        return code.describe()
    hit = _DESCRIBED.get(code)
    if hit is not None:
        return dict(hit)
    row = _DESCRIBED[code] = _describe(code)
    return dict(row)


def _describe(code) -> dict:
    the_ir = ir(code)
    lay = the_ir.layout
    analysis = {
        "version": ANALYSIS_VERSION,
        "varnames": list(code.co_varnames), "cellvars": list(code.co_cellvars),
        "freevars": list(code.co_freevars),
        "locals": [the_ir.local_name(i) for i in range(nlocalsplus(code))],
        "nparams": the_ir.nparams,
        "instrs": [[i.offset, i.opname, i.line, lay.block_of.get(i.offset, 1),
                    lay.depth.get(i.offset), i.next, i.arg, _plain_argval(i.argval)]
                   for i in lay.instrs],
        "handlers": [[h.start, h.end, h.target, h.depth, h.lasti] for h in lay.handlers],
        "argcount": [code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount],
        "arguments": [_statement(s) for s in the_ir.arguments],
        "blocks": [[_statement(s) for s in block] for block in the_ir.blocks],
        "feeds": [[off, s.offset, s.id] for off, s in the_ir.feeds.items()],
        "recs": [[off, int(r.sem), _static(r), list(r.kwnames), list(r.outputs), r.display]
                 for off, r in the_ir.recs.items()],
    }
    return {
        "qualname": code.co_qualname, "name": code.co_name, "filename": code.co_filename,
        "firstlineno": code.co_firstlineno, "flags": code.co_flags,
        "bytecode_sha256": hashlib.sha256(code.co_code).hexdigest(),
        "ir_text": str(the_ir), "analysis": json.dumps(analysis, separators=(",", ":")),
    }


# Line tables by analysis text (the same str object while its code's description is
# cached), bounded: a long-running process saving traces of ever new code.
_LINE_TABLES: dict[str, np.ndarray] = {}
_LINE_TABLES_MAX = 4096


def line_table(row: dict) -> np.ndarray:
    """The source line of each bytecode offset of a code-table row's code (int32,
    indexed by offset; -1 where no instruction or no line)."""
    analysis = row["analysis"]
    table = _LINE_TABLES.get(analysis)
    if table is None:
        instrs = json.loads(analysis)["instrs"]
        table = np.full(max((i[0] for i in instrs), default=-1) + 1, -1, dtype=np.int32)
        for off, _, line, *_ in instrs:
            if line is not None:
                table[off] = line
        table.flags.writeable = False
        if len(_LINE_TABLES) >= _LINE_TABLES_MAX:
            _LINE_TABLES.clear()
        _LINE_TABLES[analysis] = table
    return table


def _plain_argval(argval):
    """An instruction's argval when it is plain data (a name, a number), else None:
    the tape reads the names of cells and the counts of unpackings."""
    return argval if argval is None or type(argval) in (str, int, bool) else None


def _statement(s: Statement) -> list:
    return [s.offset, s.block, s.id, s.text, s.line, s.operand]


def _static(rec) -> list | str:
    if rec.sem == RecordSem.R_SPECIAL:
        return rec.fn  # a special's name
    fn = rec.fn
    return [getattr(fn, "__module__", None) or "", getattr(fn, "__qualname__", "") or "",
            short_value(fn)]


class StaticName(SavedText):
    """A record's static function a loaded trace knows by name only (its name is its
    display text, as `tracer.views.names.callable_name` named it live)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _resolve(ref) -> object:
    if isinstance(ref, str):
        return ref
    module, qualname, text = ref
    if module in _STATIC_MODULES and module in sys.modules:
        obj: object = sys.modules[module]
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if obj is not None and short_value(obj) == text:
            return obj
    return StaticName(text)


class SavedInstr(NamedTuple):
    """What the views and the tape read of an instruction of a loaded code object."""

    offset: int
    opname: str
    line: int | None
    next: int  # offset of the following instruction (after inline caches)
    arg: int | None = None
    argval: object = None  # a name or number (None for other operands and version 1)


class _SavedLayout:
    """The part of a CodeLayout the views, IR lookups and the tape read."""

    def __init__(self, instrs: list, handlers: list):
        # Version 1 saved no next offsets: the following instruction's offset (the
        # inline caches after an instruction are no instructions of their own).
        offsets = [i[0] for i in instrs]
        nexts = [i[5] if len(i) > 5 else (offsets[k + 1] if k + 1 < len(offsets)
                                           else offsets[k] + 2)
                 for k, i in enumerate(instrs)]
        self.instrs = [SavedInstr(i[0], i[1], i[2], nxt, *i[6:8])
                       for i, nxt in zip(instrs, nexts)]
        self.by_offset = {i.offset: i for i in self.instrs}
        self.block_of = {i[0]: i[3] for i in instrs}
        self.depth = {i[0]: i[4] for i in instrs if i[4] is not None}
        self.handlers = [Handler(start, end, target, depth, bool(lasti))
                         for start, end, target, depth, lasti in handlers]
        self.handler_targets = {h.target: h for h in self.handlers}


class LoadedIR(IR):
    """The IR of a loaded code object, rebuilt from its saved statements."""

    def __init__(self, code: "LoadedCode", analysis: dict):  # noqa: D107 - no IR.__init__
        self._code_obj = code
        self._locals = analysis["locals"]
        self.layout = _SavedLayout(analysis["instrs"], analysis.get("handlers", []))
        self.nparams = analysis["nparams"]
        self.recs = {off: Rec(sem, _resolve(fn), [], list(outs), tuple(kw), display)
                     for off, sem, fn, kw, outs, display in analysis["recs"]}
        self._prev = {}
        self.blocks = []
        self._by_key = {}
        self.value_id = {}
        self.branch_id = {}
        self.arguments = [Statement(*s) for s in analysis["arguments"]]
        for a in self.arguments:
            self._by_key[(-1, a.id)] = a
        for block in analysis["blocks"]:
            stmts: list[Statement] = []
            self.blocks.append(stmts)
            for s in block:
                self._add(stmts, *s)
        self.feeds = {off: self._by_key[(soff, sid)] for off, soff, sid in analysis["feeds"]}

    @property
    def code(self):
        return self._code_obj

    def local_name(self, index: int) -> str:
        n = len(self._locals)
        return self._locals[index] if index < n else f"stack[{index - n}]"


class LoadedCode:
    """Stands in for a code object in a loaded trace: its names, lines and IR.

    It has the code object's descriptive attributes (`co_qualname`, `co_name`,
    `co_filename`, `co_firstlineno`, `co_flags`, `co_varnames`, `co_cellvars`,
    `co_freevars`, the parameter counts), its float constants (`co_consts`: the
    loaded trace's own objects where the trace held them, as the tape and backprop
    tell literals apart by identity), the hash of the original bytecode, and the IR
    (`tracer.ir(c)`, `ir_text`); it cannot be run.
    """

    __slots__ = ("co_qualname", "co_name", "co_filename", "co_firstlineno", "co_flags",
                 "bytecode_sha256", "ir_text", "co_consts", "_analysis", "_parsed", "_ir", "__weakref__")

    def __init__(self, row: dict):
        self.co_qualname = str(row["qualname"])
        self.co_name = str(row["name"])
        self.co_filename = str(row["filename"])
        self.co_firstlineno = int(row["firstlineno"])
        self.co_flags = int(row["flags"])
        self.bytecode_sha256 = str(row["bytecode_sha256"])
        self.ir_text = str(row["ir_text"])
        self._analysis = str(row["analysis"])
        self._ir: LoadedIR | None = None
        self._parsed: dict | None = None
        self.co_consts: tuple = ()    # set by the decoder (encoded.py) from the value table

    def describe(self) -> dict:
        """This code's row of the code table (saving a loaded trace again)."""
        return {"qualname": self.co_qualname, "name": self.co_name,
                "filename": self.co_filename, "firstlineno": self.co_firstlineno,
                "flags": self.co_flags, "bytecode_sha256": self.bytecode_sha256,
                "ir_text": self.ir_text, "analysis": self._analysis}

    def _data(self) -> dict:
        if self._parsed is not None:
            return self._parsed
        data = json.loads(self._analysis)
        if not isinstance(data, dict) or data.get("version") not in _READABLE_VERSIONS:
            raise ValueError(f"the saved analysis of {self.co_qualname} is not of version "
                             f"{ANALYSIS_VERSION}; save the trace again with this tracer")
        self._parsed = data
        return data

    @property
    def __tracer_ir__(self) -> LoadedIR:
        if self._ir is None:
            try:
                self._ir = LoadedIR(self, self._data())
            except Exception as exc:  # whatever the damaged data trips: say so
                raise ValueError(f"the saved analysis of {self.co_qualname} is damaged "
                                 f"({type(exc).__name__}: {exc})") from None
        return self._ir

    @property
    def co_varnames(self) -> tuple:
        return tuple(self._data()["varnames"])

    @property
    def co_cellvars(self) -> tuple:
        return tuple(self._data()["cellvars"])

    @property
    def co_freevars(self) -> tuple:
        return tuple(self._data()["freevars"])

    def _counts(self) -> list:
        counts = self._data().get("argcount")
        if counts is None:
            raise ValueError(f"the saved analysis of {self.co_qualname} has no parameter "
                             "counts (saved by an older tracer): save the trace again")
        return counts

    @property
    def co_argcount(self) -> int:
        return int(self._counts()[0])

    @property
    def co_posonlyargcount(self) -> int:
        return int(self._counts()[1])

    @property
    def co_kwonlyargcount(self) -> int:
        return int(self._counts()[2])

    def line_of(self, offset: int) -> int | None:
        """The source line of the instruction at `offset` (None if unknown)."""
        ins = self.__tracer_ir__.layout.by_offset.get(offset)
        return None if ins is None else ins.line

    def __repr__(self) -> str:
        return (f"<saved code {self.co_qualname}, file {self.co_filename!r}, "
                f"line {self.co_firstlineno}>")
