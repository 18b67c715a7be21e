"""Many runs: `track_many` traces one function over a list of arguments in worker
processes (concurrent.futures) or on a Dask cluster, and writes one Parquet dataset
partitioned by run (hive style: ``path/run=K/trace.parquet``, each file a saved
trace).  `Runs` reads it back: per-run traces, or every run at once through
`pyarrow.dataset` for queries over all of them.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import random
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = ["track_many", "Runs", "RunResult"]

FILE_NAME = "trace.parquet"
# Runs handed to a worker at a time: enough to amortise a task's overhead, few
# enough that the workers share the work evenly.
BATCH = 16
# tracer records one thread at a time: tasks a Dask worker runs in several threads
# take turns.
_TRACK_LOCK = threading.Lock()


@dataclass(frozen=True)
class RunResult:
    """What one run did: its index, node count, and the exception its call raised
    (as text; the trace, saved all the same, ends in it), or None."""

    run: int
    nodes: int
    error: str | None = None


def _call_arguments(item) -> tuple:
    return item if isinstance(item, tuple) else (item,)


def _seed(seed: int | None, run: int) -> None:
    if seed is None:
        return
    random.seed(f"tracer-run-{seed}-{run}")
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        return
    np.random.seed((seed * 1_000_003 + run) % 2 ** 32)


def _warm_up(f, item, times: int) -> None:
    """Call f on copies of `item`'s arguments `times` times, untraced: the caches a
    first call fills (re's compiled patterns, lazy imports) are full when the run is
    recorded.  Its exceptions are the recorded run's business."""
    for _ in range(times):
        try:
            f(*copy.deepcopy(_call_arguments(item)))
        except Exception:
            pass


def _record_runs(f, batch: list, path: str, seed, ctx, values: str,
                 warmup: int = 0) -> list[RunResult]:
    """Trace f over `batch` ([(run, item)]) in this process, saving each run."""
    from ..api import TrackingError, last_trace, track
    from .parquet import save

    out = []
    for run, item in batch:
        with _TRACK_LOCK:
            _warm_up(f, item, warmup)
            _seed(seed, run)
            error = None
            try:
                root = track(f, *_call_arguments(item), ctx=ctx)
            except Exception as exc:  # the traced call's own exception: kept as data
                root = last_trace()
                if root is None or isinstance(exc, TrackingError):
                    raise
                error = f"{type(exc).__name__}: {exc}"
        run_dir = os.path.join(path, f"run={run}")
        os.makedirs(run_dir, exist_ok=True)
        save(root, os.path.join(run_dir, FILE_NAME), values=values)
        out.append(RunResult(run, len(root.trace), error))
    return out


def track_many(f, argument_list, path, *, processes: int | None = None, client=None,
               ctx=None, seed: int | None = None, values: str = "encode",
               warmup: int = 0) -> "Runs":
    """Trace `f` once per item of `argument_list`; write the traces as one Parquet
    dataset at `path` (a directory, created; it must not hold runs already).

    An item that is a tuple is the positional arguments of its run; anything else is
    the one argument (wrap a tuple argument as ``(t,)``).  Run k is saved at
    ``path/run=k/trace.parquet``; a run whose call raises is saved too (its root
    raised) and reported in `Runs.errors`.

    Where the runs happen:
    - ``processes=N`` (default: the number of CPUs): a `ProcessPoolExecutor` of N
      fresh (spawned) worker processes; ``processes=0`` traces them one after
      another in this process.  `f` must be importable there (a module-level
      function), as for any process pool.
    - ``client=``: a `dask.distributed.Client` (its workers must see `path`), or
      ``"local"`` for a local cluster of `processes` single-threaded workers made
      for this call and closed after it.

    ``seed=s`` seeds `random` and numpy's global generator before run k from (s, k),
    so runs are reproducible and differ from each other.

    ``warmup=w`` calls `f` w times untraced before each recorded run, on deep copies
    of that run's arguments (before the seeding: the recorded run draws what it
    would without them), so a run records its steady state, not a first call's
    cache filling (a regex's first run in a worker compiles its pattern).

    Each file has a ``callee`` column (the called function's qualified name, per
    node) beside ``function`` and ``line``: counts over all runs are one query of
    `Runs.dataset()`.
    """
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a count of untraced calls (0 or more), not {warmup!r}")
    items = list(argument_list)
    root = Path(path)
    if root.exists() and any(root.glob("run=*")):
        raise FileExistsError(f"{os.fspath(path)!r} already holds runs; choose a new directory "
                              "or remove it first")
    from .parquet import require_pyarrow

    require_pyarrow()
    root.mkdir(parents=True, exist_ok=True)
    batches = [list(enumerate(items))[i:i + BATCH] for i in range(0, len(items), BATCH)]
    args = (os.fspath(root.resolve()), seed, ctx, values, warmup)
    if client is not None:
        results = _on_dask(client, f, batches, args, processes)
    elif processes == 0:
        results = [r for b in batches for r in _record_runs(f, b, *args)]
    else:
        results = _on_processes(f, batches, args, processes)
    return Runs(root, sorted(results, key=lambda r: r.run))


def _on_processes(f, batches, args, processes):
    workers = processes or os.cpu_count() or 1
    if workers < 0:
        raise ValueError(f"processes must be >= 0, not {processes}")
    try:
        pickle.dumps(f)
    except Exception as exc:
        raise TypeError(
            f"worker processes cannot receive {f!r} ({type(exc).__name__}: {exc}): pass a "
            "function defined at module level, or use processes=0 (this process) or a "
            "Dask client (which pickles functions by value)") from None
    # spawn: fresh interpreters (forking a process with pyarrow's or the caller's
    # threads can deadlock); each imports f by name.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, max(len(batches), 1)),
                             mp_context=context) as pool:
        futures = [pool.submit(_record_runs, f, b, *args) for b in batches]
        return [r for fut in futures for r in fut.result()]


def _on_dask(client, f, batches, args, processes):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("running on Dask needs dask.distributed: pip install "
                          "'tracer[dask]'") from None
    own = None
    if isinstance(client, str):
        if client != "local":
            raise ValueError(f"client is a dask.distributed.Client or 'local', not {client!r}")
        cluster = LocalCluster(n_workers=processes or os.cpu_count() or 1,
                               threads_per_worker=1, processes=True, dashboard_address=None)
        client = own = Client(cluster)
    elif not isinstance(client, Client):
        raise TypeError("client is a dask.distributed.Client or 'local', not "
                        f"{type(client).__name__}")
    try:
        futures = [client.submit(_record_runs, f, b, *args, pure=False) for b in batches]
        return [r for batch in client.gather(futures) for r in batch]
    finally:
        if own is not None:
            cluster = own.cluster
            own.close()
            cluster.close()


class Runs:
    """The traces `track_many` wrote at a path: one Parquet dataset, partitioned by run."""

    def __init__(self, path, results: list[RunResult] | None = None):
        self.path = Path(path)
        if results is None:
            found = sorted(int(p.name.split("=", 1)[1]) for p in self.path.glob("run=*")
                           if (p / FILE_NAME).exists())
            if not found:
                raise FileNotFoundError(f"no runs under {os.fspath(path)!r}")
            results = [RunResult(k, -1) for k in found]
        self.results = results

    def __len__(self) -> int:
        return len(self.results)

    @property
    def errors(self) -> dict[int, str]:
        """The runs whose call raised: run -> the exception as text."""
        return {r.run: r.error for r in self.results if r.error is not None}

    def file(self, run: int) -> Path:
        """The Parquet file of run `run`."""
        return self.path / f"run={run}" / FILE_NAME

    def load(self, run: int, **options):
        """The root node of run `run` (`tracer.load` of its file)."""
        from .parquet import load

        return load(self.file(run), **options)

    def __iter__(self):
        """The root of each run, in run order."""
        return (self.load(r.run) for r in self.results)

    def dataset(self):
        """All runs as one `pyarrow.dataset.Dataset` (a `run` column from the paths):
        select the node columns you need, e.g. ``kind``, ``function``, ``line``,
        ``value_kind``, ``number``."""
        from .parquet import require_pyarrow

        require_pyarrow()
        import pyarrow.dataset as ds

        return ds.dataset(self.path, format="parquet", partitioning="hive")

    def __repr__(self) -> str:
        return f"<Runs: {len(self)} traces at {os.fspath(self.path)!r}>"
