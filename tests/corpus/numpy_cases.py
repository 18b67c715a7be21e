"""Corpus: numpy."""

try:
    import numpy as np
except ImportError:  # numpy is a declared dependency; a bare interpreter may still lack it
    np = None

from .common import Case
from .operators import collatz_steps


def numpy_statistics(values):
    arr = np.array(values, dtype=float)
    return {
        "mean": float(arr.mean()), "std": float(arr.std()), "cumsum": np.cumsum(arr).tolist(),
        "argmax": int(arr.argmax()), "clipped": np.clip(arr, 2, 5).tolist(),
        "normalized": ((arr - arr.min()) / (arr.max() - arr.min())).round(6).tolist(),
    }


def numpy_matrix_ops(n):
    a = np.arange(n * n).reshape(n, n)
    b = np.eye(n, dtype=int) * 2
    return {
        "product": (a @ b).tolist(), "transpose": a.T.tolist(), "trace": int(np.trace(a)),
        "row_sums": a.sum(axis=1).tolist(), "even": a[a % 2 == 0].tolist(), "diag": np.diag(a).tolist(),
    }


def numpy_linear_solve(coefficients, rhs):
    a = np.array(coefficients, dtype=float)
    b = np.array(rhs, dtype=float)
    x = np.linalg.solve(a, b)
    return np.round(x, 9).tolist(), round(float(np.linalg.det(a)), 9), bool(np.allclose(a @ x, b))


def numpy_python_callbacks(values):
    arr = np.array(values)
    collatz = np.vectorize(collatz_steps)(arr)
    rows = np.arange(12).reshape(3, 4)
    row_ranges = np.apply_along_axis(lambda r: int(r.max() - r.min()) + len(r), 1, rows)
    return collatz.tolist(), row_ranges.tolist(), np.polyval([1, -2, 1], arr).tolist()


def numpy_broadcast_and_index():
    grid = np.arange(5)[:, None] * np.arange(4)[None, :]
    grid[1:3, ::2] += 100
    mask = grid > 6
    picked = grid[[0, 2, 4], [1, 2, 3]]
    return grid.tolist(), int(mask.sum()), picked.tolist(), np.where(mask, 1, 0).sum(axis=0).tolist()


CASES = []

if np is not None:
    CASES += [
        Case("numpy_statistics", numpy_statistics, ([3, 1, 4, 1, 5, 9, 2, 6],)),
        Case("numpy_matrix_ops", numpy_matrix_ops, (4,)),
        Case("numpy_linear_solve", numpy_linear_solve, (((3, 1), (1, 2)), (9, 8))),
        Case("numpy_python_callbacks", numpy_python_callbacks, ([6, 7, 12, 27],)),
        Case("numpy_broadcast_and_index", numpy_broadcast_and_index),
    ]
