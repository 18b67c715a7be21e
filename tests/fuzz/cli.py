"""Command line for long fuzz runs, replays and reductions (`scripts/fuzz --help`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from .constructs import CONSTRUCTS, select
from .outcome import FAILURES, failure_keys
from .program import Program, generate
from .reduce import reduce_blocks
from .report import Tally, save_failure
from .runner import run_programs

DEFAULT_SAVE = Path(tempfile.gettempdir()) / "tracer-fuzz"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="scripts/fuzz", description="Generated-program differential fuzzing of tracer: each "
        "program runs untraced and traced in a child interpreter; results, LOG and exceptions must "
        "agree and every trace must pass validate and printlevels.",
        epilog="constructs: " + ", ".join(sorted(CONSTRUCTS)))
    p.add_argument("--count", type=int, default=200, help="programs to run (default 200)")
    p.add_argument("--minutes", type=float, help="run for this long instead of --count programs")
    p.add_argument("--seed", type=int, help="seed of the first program (default: from the clock, printed)")
    p.add_argument("--jobs", type=int, default=1, help="child interpreters at once (default 1)")
    p.add_argument("--batch", type=int, default=25, help="programs per child interpreter (default 25)")
    p.add_argument("--constructs", help="comma-separated constructs to enable (default all)")
    p.add_argument("--without", help="comma-separated constructs to disable")
    p.add_argument("--python", default=sys.executable, help="interpreter the children run")
    p.add_argument("--save", type=Path, default=DEFAULT_SAVE, help=f"where failing programs go (default {DEFAULT_SAVE})")
    p.add_argument("--replay", help="seeds (comma-separated, same --constructs/--without as the run) "
                   "or paths of saved programs to run again")
    p.add_argument("--show", action="store_true", help="with --replay: print each program's source")
    p.add_argument("--reduce", action="store_true", help="reduce the smallest program of each "
                   "failure class to the fewest blocks that still fail the same way, and print it")
    p.add_argument("--each", action="store_true", help="bisect by construct: run --count programs "
                   "with each construct enabled alone (of those selected) and print one line per construct")
    p.add_argument("--list", action="store_true", help="list the constructs and exit")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        for name, text in CONSTRUCTS.items():
            print(f"{name:<15}{text}")
        return 0
    try:
        enabled = select(args.constructs, args.without)
    except ValueError as err:
        print(f"scripts/fuzz: {err}", file=sys.stderr)
        return 2
    if args.replay:
        return replay(args, enabled)
    if args.each:
        return each(args, enabled)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000 * 1000
    print(f"python {args.python}; first seed {seed}; constructs: "
          f"{'all' if enabled == set(CONSTRUCTS) else ', '.join(sorted(enabled))}", flush=True)
    tally, programs = run(args.python, enabled, seed, args.count, args.minutes, args.jobs, args.batch,
                          args.save, progress=True)
    print(tally.summary())
    if tally.failed:
        print(f"\nfailing programs saved in {args.save}")
    if args.reduce:
        reduce_classes(tally, programs, args.python)
    return 1 if tally.failed else 0


def run(python: str, enabled: frozenset[str], seed: int, count: int, minutes: float | None,
        jobs: int, batch: int, save: Path | None, progress: bool = False) -> tuple[Tally, dict[str, Program]]:
    """Run `count` programs from `seed` on (or as many as fit in `minutes`); tally them."""
    tally = Tally()
    failing: dict[str, Program] = {}
    deadline = time.monotonic() + minutes * 60 if minutes else None
    next_seed, last_seed = seed, seed + count if deadline is None else None
    last_print = time.monotonic()

    def batches():
        nonlocal next_seed
        while (deadline is None and next_seed < last_seed) or (deadline and time.monotonic() < deadline):
            end = next_seed + batch if last_seed is None else min(next_seed + batch, last_seed)
            yield [generate(s, enabled) for s in range(next_seed, end)]
            next_seed = end

    def collect(programs, results):
        for program, result in zip(programs, results):
            source = program.source()
            tally.add(program, source, result)
            if result.outcome in FAILURES:
                failing[result.id] = program
                if save is not None:
                    save_failure(save, program, source, result, replay_command(program, python))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        running = {}
        for programs in batches():
            running[pool.submit(run_programs, [(str(p.seed), p.source()) for p in programs], python)] = programs
            while len(running) >= jobs:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    collect(running.pop(future), future.result())
            if progress and time.monotonic() - last_print > 30:
                last_print = time.monotonic()
                print(f"  ... {sum(tally.outcomes.values())} programs, {dict(tally.outcomes)}", flush=True)
        for future in list(running):
            collect(running.pop(future), future.result())
    return tally, failing


def each(args: argparse.Namespace, enabled: frozenset[str]) -> int:
    """One run per construct with only that construct enabled: which ones fail alone."""
    seed = args.seed if args.seed is not None else 0
    failed = 0
    print(f"python {args.python}; {args.count} programs per construct from seed {seed}")
    for name in sorted(enabled):
        tally, _ = run(args.python, frozenset({name}), seed, args.count, None, args.jobs, args.batch,
                       args.save / name if args.save else None)
        failed += tally.failed
        counts = ", ".join(f"{o} {n}" for o, n in sorted(tally.outcomes.items()))
        print(f"{name:<15}{counts}", flush=True)
        for key, examples in sorted(tally.classes.items(), key=lambda kv: -len(kv[1])):
            print(f"{'':<15}  {len(examples):>4}  {key}  [e.g. {min(examples)[1]}]")
    return 1 if failed else 0


def replay_command(program: Program, python: str) -> str:
    only = ",".join(sorted(program.enabled)) if program.enabled != set(CONSTRUCTS) else ""
    return (f"scripts/fuzz --python {python} --replay {program.seed} --show"
            + (f" --constructs {only}" if only else ""))


def replay(args: argparse.Namespace, enabled: frozenset[str]) -> int:
    failed = 0
    for item in args.replay.split(","):
        if Path(item).is_file():
            source, pid, program = Path(item).read_text(encoding="utf-8"), Path(item).stem, None
        else:
            program = generate(int(item), enabled)
            source, pid = program.source(), item
        (result,) = run_programs([(pid, source)], args.python, confirm_crashes=False)
        failed += result.outcome in FAILURES
        if args.show:
            print(source)
        print(f"{pid}: {result.outcome}" + (f"\n  {result.detail}" if result.detail else ""))
        if args.reduce and program is not None and result.outcome in FAILURES:
            for key in failure_keys(result.outcome, result.detail):
                print(f"\n=== {key}")
                print_reduced(program, key, args.python)
    return 1 if failed else 0


def reduce_classes(tally: Tally, programs: dict[str, Program], python: str) -> None:
    for key, examples in tally.classes.items():
        print(f"\n=== {key}  ({len(examples)} programs)")
        print_reduced(programs[min(examples)[1]], key, python)


def print_reduced(program: Program, key: str, python: str) -> None:
    keep = reduce_blocks(program, key, python)
    print(f"# seed {program.seed}, blocks kept {keep} of {len(program.blocks)}")
    print(program.source(keep))
