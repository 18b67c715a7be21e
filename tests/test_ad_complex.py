"""Complex intermediate values of a function of real arguments (issue 23): the
rules follow autograd's convention (the adjoint of z = a + ib is dL/da - i dL/db;
holomorphic functions keep their real rules, `abs`, `real`, `imag`, `conj`,
`angle` do not), and a real value's adjoint is the real part of a complex one.
Before, `np.imag`/`np.angle` gave zero and `abs` of a complex value a complex
gradient: wrong values with no error.  Each is checked against central differences
(first and second order), and `np.linalg.eig` (complex eigenpairs of a real
matrix) through phase-invariant uses."""

from __future__ import annotations

import numpy as np
import pytest

import tracer

from ad_cases import numeric

SCALAR = {
    "imag_exp": lambda x: np.imag(np.exp(1j * x)),
    "real_exp": lambda x: np.real(np.exp(1j * x) * x),
    "abs_complex": lambda x: np.abs(np.exp(1j * x) * (x + 0.5)),
    "builtin_abs": lambda x: abs(x + 1j) ** 2 + abs(1j * x * x + x),
    "angle": lambda x: np.angle(np.exp(1j * x) * (x + 2.0)),
    "conj": lambda x: np.real(np.conj(x * (1 + 2j)) * (3 - 1j)),
    "array_mix": lambda x: float(np.sum(np.abs(np.array([x, 2.0]) * np.array([1j, 1 + x * 1j])))),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_complex_intermediates_match_central_differences(name):
    f = SCALAR[name]
    g = tracer.grad(f)
    want = numeric(f, 0.7)
    for _ in range(3):
        got = g(0.7)
        assert type(got) is float
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", ["imag_exp", "abs_complex", "angle", "builtin_abs"])
def test_complex_intermediates_second_order(name):
    f = SCALAR[name]
    g = tracer.grad(f)
    want = numeric(lambda a: g(a), 0.7)
    gg = tracer.grad(g)
    for _ in range(3):
        assert gg(0.7) == pytest.approx(want, rel=1e-5, abs=1e-6)


R = np.random.default_rng(5)
M = R.standard_normal((5, 5))  # real, with complex eigenvalues


def eig_abs(x):
    w, v = np.linalg.eig(x)
    return np.sum(np.abs(w) * np.arange(1.0, 6.0)) + np.sum(np.abs(v) * M)


def test_eig_of_a_real_matrix_with_complex_eigenpairs():
    assert np.iscomplexobj(np.linalg.eig(M)[0])
    g = tracer.grad(eig_abs)
    want = numeric(eig_abs, M)
    for _ in range(3):
        got = g(M)
        assert got.dtype == np.float64
        assert np.allclose(got, want, rtol=1e-4, atol=1e-6)


def test_eig_second_order_along_a_direction():
    d = R.standard_normal((5, 5))
    g = tracer.grad(eig_abs)
    h = tracer.grad(lambda x: np.sum(g(x) * d))
    eps = 1e-6
    e = R.standard_normal((5, 5))
    numeric_dir = float(np.sum((g(M + eps / 2 * e) - g(M - eps / 2 * e)) / eps * d))
    assert float(np.sum(h(M) * e)) == pytest.approx(numeric_dir, rel=1e-4, abs=1e-6)


def test_a_complex_function_without_a_rule_is_refused():
    with pytest.raises(tracer.NoRuleError):
        tracer.grad(lambda x: float(np.sum(np.abs(np.fft.fft(np.array([x, 2 * x, x * x]))))))(0.7)


C = R.standard_normal((3, 3)) + 1j * R.standard_normal((3, 3)) + 3 * np.eye(3)


def _complex_numeric(f, z, eps=1e-6):
    """dL/da - i dL/db for real L of complex z = a + ib (autograd's convention)."""
    out = np.zeros(z.shape, dtype=complex)
    for i in np.ndindex(z.shape):
        d = np.zeros(z.shape)
        d[i] = eps
        da = (f(z + d) - f(z - d)) / (2 * eps)
        db = (f(z + 1j * d) - f(z - 1j * d)) / (2 * eps)
        out[i] = da - 1j * db
    return out


@pytest.mark.parametrize("f", [
    lambda z: float(np.abs(np.linalg.det(z))),
    lambda z: float(np.sum(np.abs(np.linalg.inv(z)) ** 2)),
    lambda z: float(np.sum(np.real(np.linalg.solve(z, np.ones(3)) * (1 - 2j)))),
    lambda z: float(np.sum(np.abs(np.linalg.eig(z)[0]))),
], ids=["det", "inv", "solve", "eig"])
def test_complex_matrix_arguments_follow_autograd_convention(f):
    g = tracer.grad(f)
    want = _complex_numeric(f, C)
    for _ in range(3):
        assert np.allclose(g(C), want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", [
    lambda z: float(np.linalg.norm(z)),
    lambda z: float(np.sum(np.linalg.svd(z, compute_uv=False))),
    lambda z: float(np.sum(np.linalg.eigh(z @ np.conj(z.T))[0])),
], ids=["norm", "svd", "eigh"])
def test_complex_matrices_into_real_only_rules_are_refused(f):
    """These rules' formulas have no conjugates: a complex matrix is refused, not
    given a wrong gradient (as it was)."""
    with pytest.raises(tracer.NoRuleError, match="real matrices"):
        tracer.grad(f)(C)
