"""Counts by outcome and by construct, failure classes, and failing programs saved for replay."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .outcome import FAILURES, OK, OUTCOMES, failure_keys
from .program import Program
from .runner import Result


@dataclass
class Tally:
    """Everything a run found, added to program by program."""

    outcomes: Counter = field(default_factory=Counter)
    by_construct: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    # failure class -> [(source length, program id)], to pick the smallest example
    classes: dict[str, list[tuple[int, str]]] = field(default_factory=lambda: defaultdict(list))
    nodes: int = 0
    seconds: list[float] = field(default_factory=lambda: [0.0, 0.0])

    def add(self, program: Program, source: str, result: Result) -> None:
        self.outcomes[result.outcome] += 1
        for name in program.constructs:
            self.by_construct[name][result.outcome] += 1
        if result.outcome in FAILURES:
            for key in failure_keys(result.outcome, result.detail):
                self.classes[key].append((len(source), result.id))
        self.nodes += result.record.get("nodes", 0)
        for i, s in enumerate(result.record.get("seconds", ())):
            self.seconds[i] += s

    @property
    def failed(self) -> int:
        return sum(n for o, n in self.outcomes.items() if o in FAILURES)

    def summary(self) -> str:
        """The counts as text: by outcome, by construct (programs containing it), by class."""
        total = sum(self.outcomes.values())
        lines = [f"{total} programs: " + ", ".join(f"{o} {self.outcomes[o]}" for o in OUTCOMES if self.outcomes[o]),
                 f"nodes recorded {self.nodes}; time in programs untraced {self.seconds[0]:.1f} s, "
                 f"traced and checked {self.seconds[1]:.1f} s", "",
                 f"{'construct':<15}{'programs':>9}  " + "  ".join(f"{o:>13}" for o in OUTCOMES if o != OK)]
        for name in sorted(self.by_construct):
            counts = self.by_construct[name]
            lines.append(f"{name:<15}{sum(counts.values()):>9}  "
                         + "  ".join(f"{counts[o]:>13}" for o in OUTCOMES if o != OK))
        if self.classes:
            lines += ["", "failure classes (programs, smallest example; a program may be in several):"]
            for key, examples in sorted(self.classes.items(), key=lambda kv: -len(kv[1])):
                lines.append(f"  {len(examples):>5}  {key}  [e.g. {min(examples)[1]}]")
        return "\n".join(lines)


def save_failure(directory: Path, program: Program, source: str, result: Result, replay: str) -> Path:
    """Write the failing program with its error text and the command that replays it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"seed-{program.seed}-{result.outcome}.py"
    detail = "\n".join("#   " + line for line in result.detail.splitlines()) or "#"
    path.write_text(f"# outcome: {result.outcome}\n# detail:\n{detail}\n# replay: {replay}\n{source}",
                    encoding="utf-8")
    return path
