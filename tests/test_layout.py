"""One declaration of the core's layout, seen from both sides, and the core as the
bottom layer: it imports no tracer module."""

import glob
import re
import os
import subprocess
import sys

import tracer
from tracer import _core, context
from tracer.analysis import instructions as effects, microops, plan
from tracer.views import nodes


def test_micro_ops_are_the_cores():
    assert microops.MICRO_OPS == tuple(m.name[2:] for m in _core.MicroOp)
    for m in _core.MicroOp:
        assert getattr(microops, m.name) == int(m), m.name
    assert _core.MICRO_OPS == microops.MICRO_OPS


def test_record_and_op_words_are_the_cores():
    words = _core.WORDS
    assert microops.OP_WORDS == words["OP_WORDS"] == 5
    assert (effects.R_OP, effects.R_CALL, effects.R_CALL_EX, effects.R_SPECIAL) == tuple(
        int(r) for r in _core.RecordSem)
    # A record as plan.py writes it, read with the core's word positions.
    def f(a, b):
        return max(a, b, key=abs)

    p = plan.plan_for(f.__code__)
    (call,) = [r for r in p.rec_at.values() if r.sem == effects.R_CALL]
    start = None
    for i in range(0, len(p.recs)):
        if (p.recs[i + words["REC_SEM"]] == effects.R_CALL
                and p.recs[i + words["REC_NIN"]] == len(call.inputs)):
            start = i
            break
    assert start is not None
    assert p.recs[start + words["REC_NOUT"]] == len(call.outputs) == 1
    assert p.statics[p.recs[start + words["REC_KW"]]] == ("key",)


def test_flags_and_classes_are_the_cores():
    assert (microops.LF_SAFE, microops.LF_CELL, microops.LF_DYN) == tuple(int(f) for f in _core.LocalFlag)
    assert (microops.IV_NONE, microops.IV_ANY, microops.IV_BOOL) == tuple(int(v) for v in _core.Intervention)
    assert (microops.JUMP_EVENT, microops.SILENT_BRANCH) == tuple(int(u) for u in _core.UnitFlag)
    assert microops.SPECIAL_SHADOW == {effects.NULL: _core.WORDS["SET_NULL"],
                                   effects.UNKNOWN: _core.WORDS["SET_UNKNOWN"],
                                   effects.CAPTURED: _core.WORDS["SET_DYN"]}
    assert _core.KINDS == tuple(k.name[2:].lower() for k in _core.NodeKind)
    assert [cls.kind for cls in nodes._CLASSES] == list(_core.KINDS)
    assert nodes.F == _core.FLAGS == {f.name[2:].lower(): int(f) for f in _core.NodeFlag}


def test_hook_bits_are_the_cores():
    core = _core.HOOK_BITS
    for name in ("canrecur", "enter", "substitute", "override", "snapshot"):
        assert context.HOOK_BITS[name] == core[name]
    for kind, name in enumerate(context.NODE_HOOKS):
        assert context.HOOK_BITS[name] == core["node"] << kind
    assert context.H_PRIMITIVES == core["primitives"]
    assert context.SNAPSHOT_POLICIES == {"none": 0, "copy": core["snapshot_copy"],
                                         "deepcopy": core["snapshot_deepcopy"]}


def _core_alone(then: str) -> str:
    """Run `then` in a fresh interpreter that loaded the compiled core on its own,
    as `mod`, without the tracer package; its output."""
    location = os.path.dirname(tracer.__file__)
    (path,) = glob.glob(os.path.join(
        location, f"_core.cpython-{sys.version_info[0]}{sys.version_info[1]}*.so"))
    probe = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('tracer._core', {path!r})\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n" + then
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_core_imports_no_tracer_module():
    imported = _core_alone(
        "print(sorted(m for m in sys.modules if m.startswith('tracer') and m != 'tracer._core'))")
    assert imported == "[]"
    location = os.path.dirname(tracer.__file__)
    for src in glob.glob(os.path.join(location, "_core", "*.pxi")) + [
            os.path.join(location, "_core.pyx")]:
        text = open(src).read()
        assert not re.search(r"^\s*(from tracer\b|import tracer\b|from \.)", text, re.M), src


def test_an_unconfigured_core_says_what_to_do():
    out = _core_alone(
        "try:\n"
        "    mod.plan_of((lambda: 1).__code__)\n"
        "except RuntimeError as e:\n"
        "    print(e)\n")
    assert "import tracer" in out and "build_plan" in out
