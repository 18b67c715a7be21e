"""What one program's two runs amount to: the outcome classes and the key of a failure class."""

from __future__ import annotations

import re

OK, MISMATCH, CRASH, HANG, TRACE_BROKEN, TRACKER_ERROR, INVALID = (
    "ok", "mismatch", "crash", "hang", "trace-broken", "tracker-error", "invalid")
# Most severe first: a program gets the first outcome that applies.
OUTCOMES = (CRASH, HANG, MISMATCH, TRACKER_ERROR, TRACE_BROKEN, INVALID, OK)
FAILURES = frozenset(OUTCOMES) - {OK}
# Exceptions generated code raises on purpose; any other one escaping main untraced
# means the generator wrote a wrong program (reported as `invalid`, not blamed on tracer).
INTENDED = frozenset({"FuzzError", "ValueError", "LookupError", "KeyError", "ZeroDivisionError"})


def classify(record: dict) -> tuple[str, str]:
    """(outcome, detail) for a record the child wrote for a program that finished."""
    if "harness_error" in record:
        return INVALID, f"harness: {record['harness_error']}"
    untraced, traced = record["untraced"], record["traced"]
    if record.get("tracker_error"):
        # TrackingError: the call ran untracked to its end; compare that run too, as a
        # changed behaviour would be worse than the tracking failure.
        if untraced != traced or record["log_untraced"] != record["log_traced"]:
            return MISMATCH, _difference(record) + "; after " + record["tracker_error"]
        return TRACKER_ERROR, record["tracker_error"]
    if untraced != traced or record["log_untraced"] != record["log_traced"]:
        return MISMATCH, _difference(record)
    # The program traced again: under a value policy, and on the general paths.
    again = [(run, _pass_name(run)) for run in (record.get("policy"), record.get("general")) if run]
    for run, under in again:
        if run.get("tracker_error"):
            return TRACKER_ERROR, f"{under}: {run['tracker_error']}"
        if untraced != run["traced"] or record["log_untraced"] != run["log_traced"]:
            return MISMATCH, _difference(dict(record, **run)) + f" ({under})"
    broken = [f"{what}: {record[what]}" for what in ("validate", "printlevels", "printlevels_all", "complete",
                                                       "sources")
              if record.get(what)]
    broken += [f"{what} {under}: {run[what]}" for run, under in again for what in ("validate", "structure")
               if run.get(what)]
    if broken:
        return TRACE_BROKEN, "; ".join(broken)
    if "raised" in untraced and untraced["raised"] not in INTENDED:
        return INVALID, f"untraced run raised {untraced['raised']}: {untraced['message']}"
    return OK, ""


def _pass_name(run: dict) -> str:
    if run.get("general"):
        return "on the general paths"
    return f"under values={run.get('values')!r}" + (" through canrecur" if run.get("follow") else "")


def _difference(record: dict) -> str:
    parts = []
    if record["untraced"] != record["traced"]:
        parts.append(f"outcome untraced {record['untraced']} != traced {record['traced']}")
    if record["log_untraced"] != record["log_traced"]:
        parts.append(f"LOG untraced {_short(record['log_untraced'])} != traced {_short(record['log_traced'])}")
    return "; ".join(parts)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def failure_keys(outcome: str, detail: str) -> list[str]:
    """The failure classes of a program: its outcome and error text with numbers and
    names of generated things blurred, so the same bug in two programs gets one key.
    A broken trace has one class per check that failed."""
    if outcome == MISMATCH:
        what = [w for w in ("outcome", "LOG") if f"{w} untraced" in detail]
        under = re.search(r"\((under values='\w+'( through canrecur)?|on the general paths)\)$", detail)
        return [f"{outcome}: {' and '.join(what)} differ" + ("; tracker error" if "after " in detail else "")
                + (f" {under.group(0)}" if under else "")]
    if outcome in (CRASH, HANG):
        return [f"{outcome}: {detail.splitlines()[0] if detail else ''}"]
    if outcome == TRACE_BROKEN:
        return [_blur(outcome, part) for part in detail.split("; ")]
    return [_blur(outcome, detail)]


def _blur(outcome: str, text: str) -> str:
    text = re.sub(r"0x[0-9a-f]+", "0x?", text)
    # Generated names carry a number (part3_match, walk2, inner1): keep the stem.
    text = re.sub(r"\bpart\d+_", "part*_", text)
    text = re.sub(r"\b([A-Za-z_]+?)\d+\b", r"\1*", text)
    text = re.sub(r"-?\d+", "N", text)
    return f"{outcome}: {text[:300]}"
