"""Each numpy rule of tracer.ad.numpy_extra and tracer.ad.linalg_rules against a
central difference: the vector-Jacobian product along a random output direction,
dotted with a random input direction, must match the directional derivative."""

from __future__ import annotations

import numpy as np
import pytest

import tracer

R = np.random.default_rng(3)
A = R.standard_normal((3, 4))
B = R.standard_normal((4, 2))
V = R.standard_normal(4)
P = np.abs(R.standard_normal((3, 4))) + 0.5
SQ = R.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = SQ @ SQ.T + np.eye(3)
STACK = R.standard_normal((2, 3, 3)) + 3 * np.eye(3)

CASES = {
    "exp2": (np.exp2, A), "arcsin": (lambda x: np.arcsin(x * 0.3), A),
    "arccosh": (lambda x: np.arccosh(x + 2.0), P), "arctanh": (lambda x: np.arctanh(x * 0.2), A),
    "sinc": (np.sinc, A), "deg2rad": (np.deg2rad, A), "sign": (lambda x: np.sign(x) * x, A),
    "remainder": (lambda x: np.remainder(x, 0.7), A), "mod_op": (lambda x: x % 0.7, A),
    "hypot": (lambda x: np.hypot(x, 2.0), A), "logaddexp2": (lambda x: np.logaddexp2(x, 0.3), A),
    "prod": (np.prod, P), "prod_axis": (lambda x: np.prod(x, axis=1), P),
    "prod_with_zero": (np.prod, np.array([1.5, 0.0, 2.0])),
    "var": (lambda x: np.var(x, axis=0), A), "std_ddof": (lambda x: np.std(x, ddof=1), A),
    "cumsum": (lambda x: np.cumsum(x, axis=1), A), "cumsum_flat": (np.cumsum, A),
    "trace": (np.trace, SQ), "diag_of_vector": (np.diag, V), "diag_k": (lambda x: np.diag(x, 1), A),
    "triu": (lambda x: np.triu(x, 1), A), "tril": (np.tril, A),
    "roll": (lambda x: np.roll(x, 2, axis=1), A), "roll_flat": (lambda x: np.roll(x, 5), A),
    "flipud": (np.flipud, A), "rot90": (np.rot90, A), "moveaxis": (lambda x: np.moveaxis(x, 0, 1), A),
    "sort": (lambda x: np.sort(x, axis=0), A), "take": (lambda x: np.take(x, [0, 2, 2], axis=1), A),
    "repeat": (lambda x: np.repeat(x, 2, axis=0), A), "repeat_flat": (lambda x: np.repeat(x, 3), V),
    "tile": (lambda x: np.tile(x, (2, 1)), A), "diff": (lambda x: np.diff(x, n=2, axis=1), A),
    "pad": (lambda x: np.pad(x, 1), A), "concatenate_axis": (lambda x: np.concatenate([x, 2 * x], axis=1), A),
    "vstack_1d": (lambda x: np.vstack([x, x * 3.0]), V), "hstack": (lambda x: np.hstack((x, x)), A),
    "column_stack": (lambda x: np.column_stack([x, x ** 2]), V),
    "append": (lambda x: np.append(x, V), A), "append_axis": (lambda x: np.append(x, x, axis=0), A),
    "split": (lambda x: np.split(x, 2, axis=1)[1] * 2.0, A),
    "einsum_matmul": (lambda x: np.einsum("ij,jk->ik", x, B), A),
    "einsum_sum": (lambda x: np.einsum("ij->", x), A),
    "einsum_implicit": (lambda x: np.einsum("ij,j", x, V), A),
    "einsum_ellipsis": (lambda x: np.einsum("...j,jk->...k", x, B), A),
    "tensordot": (lambda x: np.tensordot(x, B, axes=1), A),
    "tensordot_pairs": (lambda x: np.tensordot(x, A, axes=([0, 1], [0, 1])), A),
    "kron": (lambda x: np.kron(x, np.eye(2)), A), "inner": (lambda x: np.inner(x, x), A),
    "outer": (lambda x: np.outer(x, V), V), "cross": (lambda x: np.cross(x[:3], V[1:]), V),
    "astype": (lambda x: x.astype(np.float64) * 2.0, A),
    "nan_to_num": (np.nan_to_num, A), "linspace": (lambda x: np.linspace(x, 2.0 * x, 5), 0.7),
    "inv": (np.linalg.inv, SQ), "inv_stack": (np.linalg.inv, STACK),
    "solve": (lambda x: np.linalg.solve(x, V[:3]), SQ), "solve_b": (lambda b: np.linalg.solve(SQ, b), V[:3]),
    "det": (np.linalg.det, SQ), "slogdet": (lambda x: np.linalg.slogdet(x)[1], SQ),
    "cholesky": (lambda x: np.linalg.cholesky(0.5 * (x + x.T)), SPD),
    "eigh_values": (lambda x: np.linalg.eigh(x)[0], SPD),
    "eigh_vectors": (lambda x: np.abs(np.linalg.eigh(x)[1]), SPD),
    "svd_values": (lambda x: np.linalg.svd(x, compute_uv=False), A),
    "svd_thin": (lambda x: np.sum(np.abs(np.linalg.svd(x, full_matrices=False)[0]) ** 2 * 0.0)
                 + np.linalg.svd(x, full_matrices=False)[1], A),
    "pinv": (np.linalg.pinv, A),
    "norm_axis": (lambda x: np.linalg.norm(x, axis=1), A), "norm_ord1": (lambda x: np.linalg.norm(x, 1), V),
    "norm_ord3": (lambda x: np.linalg.norm(x, ord=3, axis=0), A),
    "norm_fro": (lambda x: np.linalg.norm(x, "fro"), A), "norm_nuc": (lambda x: np.linalg.norm(x, "nuc"), A),
    "gradient_1d": (np.gradient, V), "gradient_axis": (lambda x: np.gradient(x, axis=0), A),
    "gradient_two": (lambda x: np.gradient(x[:2], axis=-1), A),
    "gradient_all_axes": (lambda x: np.stack(np.gradient(x)), A),
    "gradient_3d_axes": (lambda x: np.stack(np.gradient(x, axis=(0, 2))),
                         R.standard_normal((3, 2, 4))),
    # a repeated index in the differentiated operand (a diagonal), and in another one
    "einsum_trace": (lambda x: np.einsum("ii->", x), SQ), "einsum_trace_implicit": (lambda x: np.einsum("ii", x), SQ),
    "einsum_diagonal": (lambda x: np.einsum("ii->i", x), SQ),
    "einsum_diag_times": (lambda x: np.einsum("ij,jj->i", A.T[:3], x), SQ),
    "einsum_diag_other": (lambda x: np.einsum("ij,jj->i", x, SQ), A[:, :3]),
    "einsum_diag_3d": (lambda x: np.einsum("iij->j", x), R.standard_normal((3, 3, 2))),
    "einsum_diag_kept": (lambda x: np.einsum("iji->ij", x), R.standard_normal((3, 2, 3))),
    "einsum_diag_sublist": (lambda x: np.einsum(x, [0, 0], [0]), SQ),
    "r_slice": (lambda x: np.r_[x, V, 1:10], V), "r_slices": (lambda x: np.r_[2:4, x, 0:3:3j, x * 2.0], V),
    "cross_axes": (lambda x: np.cross(x, SQ, axisa=0, axisb=1, axisc=0), SQ),
    "cross_axis": (lambda x: np.cross(SQ, x, axis=0), STACK[0]),
    "cross_axisb": (lambda x: np.cross(x, SQ, 1, 0, -1), SQ),
}


def _check(f, x):
    rng = np.random.default_rng(0)
    y, pullback = tracer.vjp(f, x)
    u = rng.standard_normal(np.shape(y))
    v = rng.standard_normal(np.shape(x))
    adj = pullback(u if np.ndim(y) else float(u))[0]
    exact = float(np.sum(v * adj))
    eps = 1e-6
    numeric = float(np.sum(u * (np.asarray(f(x + eps / 2 * v)) - np.asarray(f(x - eps / 2 * v))) / eps))
    assert exact == pytest.approx(numeric, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_central_difference(name):
    f, x = CASES[name]
    _check(f, x)


@pytest.mark.parametrize("name", ["prod", "einsum_matmul", "inv", "norm_axis", "cumsum",
                                  "gradient_all_axes"])
def test_rule_in_a_scalar_function_through_grad(name):
    f, x = CASES[name]
    g = tracer.grad(lambda a: np.sum(np.sin(f(a))))
    first = g(x)
    assert np.allclose(g(x), first) and np.allclose(g(x), first)  # cached, compiled paths
    eps = 1e-6
    d = np.zeros(np.shape(x))
    d.flat[0] = 1.0
    h = lambda a: np.sum(np.sin(f(a)))  # noqa: E731
    assert np.ravel(first)[0] == pytest.approx((h(x + eps * d) - h(x - eps * d)) / (2 * eps),
                                               rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", ["einsum_trace", "einsum_diag_times", "einsum_diag_kept",
                                  "r_slice", "cross_axes", "cross_axis"])
def test_new_rules_at_second_order(name):
    """grad of grad through the rules (their pullbacks are plain numpy an outer
    gradient follows), against central differences of the first gradient."""
    f, x = CASES[name]
    rng = np.random.default_rng(1)
    w = rng.standard_normal(np.shape(f(x)))
    v = rng.standard_normal(np.shape(x))
    g = tracer.grad(lambda a: np.sum(np.sin(f(a)) * w))
    h = tracer.grad(lambda a: np.sum(g(a) * v))
    eps = 1e-6
    d = rng.standard_normal(np.shape(x))
    for _ in range(3):
        exact = float(np.sum(h(x) * d))
        numeric = float(np.sum((g(x + eps / 2 * d) - g(x - eps / 2 * d)) / eps * v))
        assert exact == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_gradient_with_spacing_is_refused():
    with pytest.raises(tracer.NoRuleError, match="unit spacing"):
        tracer.grad(lambda x: np.sum(np.gradient(x, 0.5)))(V)
