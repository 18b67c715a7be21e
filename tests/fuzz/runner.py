"""The parent side: run programs in child interpreters, attribute crashes, classify outcomes.

Programs go to a child in batches (starting an interpreter and importing tracer costs
more than most programs).  The child logs `begin` before each program, so when it
dies the program that was running is known; that program is then run again alone in
a fresh interpreter to tell whether it crashes by itself, and the rest of the batch
goes on in a new child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .outcome import CRASH, HANG, classify

TESTS_DIR = Path(__file__).resolve().parent.parent
# Generous: a traced program is far slower than untraced, and the first trace of
# asyncio analyses much of the library.
BATCH_TIMEOUT_BASE = 60.0
PROGRAM_TIMEOUT = 20.0


@dataclass
class Result:
    """One program's outcome."""

    id: str
    outcome: str
    detail: str = ""
    record: dict = field(default_factory=dict)


def run_programs(programs: list[tuple[str, str]], python: str = sys.executable,
                 confirm_crashes: bool = True) -> list[Result]:
    """Run `(id, source)` pairs in as few child interpreters as crashes allow."""
    sources = dict(programs)
    pending = [pid for pid, _ in programs]
    results: dict[str, Result] = {}
    while pending:
        done, died = _run_child(python, [(pid, sources[pid]) for pid in pending])
        for pid, record in done.items():
            outcome, detail = classify(record)
            results[pid] = Result(pid, outcome, detail, record)
        if died is not None:
            pid, outcome, detail = died
            if confirm_crashes and len(pending) > 1:
                alone, _ = _run_child(python, [(pid, sources[pid])])
                if pid in alone:
                    detail += (" (crashed only in its batch: alone it finished; programs run"
                               f" before it in that child: {', '.join(pending[:pending.index(pid)]) or 'none'})")
            results[pid] = Result(pid, outcome, detail)
        pending = [pid for pid in pending if pid not in results]
    return [results[pid] for pid, _ in programs]


def _run_child(python: str, programs: list[tuple[str, str]]):
    """Run one child; returns (records of finished programs, (id, outcome, detail) of
    the program it died in, or None)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        progress = Path(tmp) / "progress.jsonl"
        progress.touch()
        job = {"programs": [{"id": pid, "source": src} for pid, src in programs], "progress": str(progress)}
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=os.pathsep.join(
            [str(TESTS_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        timeout = BATCH_TIMEOUT_BASE + PROGRAM_TIMEOUT * len(programs)
        started = time.monotonic()
        proc = subprocess.Popen([python, "-m", "fuzz.child"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                                start_new_session=True)
        try:
            out, err = proc.communicate(json.dumps(job), timeout=timeout)
            hung = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            hung = True
        records, running = _read_progress(progress)
    if proc.returncode == 0 and running is None and len(records) == len(programs):
        return records, None
    if running is None and len(records) == len(programs):
        # Every program reported, then the child died or hung on its way out
        # (interpreter finalization: what a trace kept alive is freed there): the
        # last program's finding, its report replaced by the crash.
        running = programs[-1][0]
        del records[running]
    elif running is None:  # died before the first program or between two
        running = next(pid for pid, _ in programs if pid not in records)
    if hung:
        return records, (running, HANG, f"no result after {time.monotonic() - started:.0f} s; killed")
    code = proc.returncode
    how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    tail = "\n".join((err or out or "").strip().splitlines()[-25:])
    return records, (running, CRASH, f"{how} without a report\n{tail}")


def _read_progress(path: Path) -> tuple[dict[str, dict], str | None]:
    records: dict[str, dict] = {}
    running = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by the crash
            continue
        if "begin" in entry:
            running = entry["begin"]
        else:
            records[entry["id"]] = entry
            running = None
    return records, running
