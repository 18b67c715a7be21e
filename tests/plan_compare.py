"""The fast plan builder against the reference one (dis decoding, every segment
walked again in every round): both must give the same plan, field by field."""

from tracer.analysis.plan import PLAN_FIELDS, CodePlan, _Builder


def _same_statics(a: list, b: list) -> bool:
    # Callables by identity; strings and keyword-name tuples by value and type.
    return len(a) == len(b) and all(x is y or (type(x) is type(y) and x == y) for x, y in zip(a, b))


def plan_difference(fast: CodePlan, ref: CodePlan) -> str | None:
    """The first field in which two plans differ, or None."""
    for name in PLAN_FIELDS:
        x, y = getattr(fast, name), getattr(ref, name)
        if not (_same_statics(x, y) if name == "statics" else x == y):
            return name
    if fast.rec_at != ref.rec_at:
        return "rec_at"
    # (A plan read from the cache makes its layout from the code when asked.)
    la = fast._layout if fast._layout is not None else fast.layout
    lb = ref._layout if ref._layout is not None else ref.layout
    key = [(i.offset, i.next, i.opname, i.opcode, i.arg, i.target) for i in la.instrs]
    if key != [(i.offset, i.next, i.opname, i.opcode, i.arg, i.target) for i in lb.instrs]:
        return "layout.instrs"
    for name in ("depth", "block_of", "handlers", "handler_targets"):
        if getattr(la, name) != getattr(lb, name):
            return f"layout.{name}"
    if [(b.id, b.start, b.end) for b in la.blocks] != [(b.id, b.start, b.end) for b in lb.blocks]:
        return "layout.blocks"
    return None


def compare_builders(code, mode: int) -> CodePlan:
    """Build `code`'s plan both ways; AssertionError naming the field if they differ."""
    fast = _Builder(code, mode).build()
    diff = plan_difference(fast, _Builder(code, mode, reference=True).build())
    assert diff is None, f"{code.co_qualname} (mode {mode}): the plans differ in {diff}"
    return fast
