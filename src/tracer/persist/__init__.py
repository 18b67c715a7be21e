"""Traces leave the process: save/load as Parquet, pickling, and many runs.

`save(root, path)` / `load(path)` (one Parquet file, through pyarrow: the optional
extra `tracer[arrow]`), `pickle.dumps(root)` (registered on import), and
`track_many(f, argument_list, path)` (runs traced in worker processes or on Dask,
one Parquet dataset partitioned by run).  Sits above the views (it builds node views
of loaded traces); views, analysis and the core do not import it.
"""

from ..api import HOST
from .codes import LoadedCode, LoadedIR
from .encode import Opaque, OpaqueException, PickleRefused
from .parquet import load, save
from .many import RunResult, Runs, track_many
from . import pickling  # noqa: F401  (registers Trace.__reduce__)

__all__ = ["save", "load", "track_many", "Runs", "RunResult", "LoadedCode", "LoadedIR", "Opaque", "OpaqueException",
           "PickleRefused"]

HOST.save = save   # Trace.save (the core's host: tracer.api)
