"""Rules for numpy.linalg: inv, solve, det, slogdet, cholesky, eig, eigh, svd, pinv and
norm (with `ord` and `axis`), on stacks of matrices as numpy broadcasts them.
The formulas are the standard matrix-calculus ones (as autograd and jax use)."""

from __future__ import annotations

import numpy as np

from .errors import NoRuleError
from .rules import defrule

__all__: list[str] = []

la = np.linalg


def _T(a):
    return np.swapaxes(a, -1, -2)


def _inv_pb(g, ans, a):
    return -_T(ans) @ g @ _T(ans)


def _solve_a(g, ans, a, b):
    gb = _solve_b(g, ans, a, b)
    x = ans if np.ndim(b) == np.ndim(a) else ans[..., None]
    gb2 = gb if np.ndim(b) == np.ndim(a) else gb[..., None]
    return -gb2 @ _T(x)


def _solve_b(g, ans, a, b):
    if np.ndim(b) == np.ndim(a):
        return la.solve(_T(a), g)
    return la.solve(_T(a), np.asarray(g)[..., None])[..., 0]


def _det_pb(g, ans, a):
    return (np.asarray(g) * ans)[..., None, None] * _T(la.inv(a))


def _slogdet_pb(g, ans, a):
    gl = g.items.get(1) if hasattr(g, "items") and not isinstance(g, (tuple, list)) else g[1]
    if gl is None:
        return np.zeros(np.shape(a))
    return np.asarray(gl)[..., None, None] * _T(la.inv(a))


def _cholesky_pb(g, ans, a):
    # Murray (2016): phi(L^T g) with the lower triangle, then the symmetric part.
    L = ans
    phi = np.tril(_T(L) @ g)
    phi = phi - 0.5 * np.tril(np.triu(phi))  # halve the diagonal
    Linv = la.inv(L)
    s = _T(Linv) @ phi @ Linv
    return 0.5 * (s + _T(s))


def _eig_pb(g, ans, a):
    """A general square matrix: eigenvalues and eigenvectors may be complex even for
    a real one (autograd's formula and complex convention; the eigenvectors are
    numpy's, of unit norm, so the adjoint of a phase-invariant use is defined)."""
    e, u = ans
    n = e.shape[-1]
    items = g.items if hasattr(g, "items") and not isinstance(g, (tuple, list)) else dict(list(enumerate(g)))
    ge, gu = items.get(0), items.get(1)
    eye = np.eye(n)
    ut = _T(u)
    inner = np.zeros(np.shape(u), dtype=complex)
    if ge is not None:
        inner = inner + np.asarray(ge)[..., None] * eye
    if gu is not None:
        off = np.eye(n, dtype=bool)
        diff = e[..., None, :] - e[..., :, None]
        f = np.where(off, 0.0, 1.0 / np.where(off, 1.0, diff))
        utgu = ut @ gu
        inner = inner + f * utgu - f * ((ut @ np.conj(u)) @ (np.real(utgu) * eye))
    r = la.inv(ut) @ inner @ ut
    return r if np.iscomplexobj(a) else np.real(r)


def _eigh_pb(g, ans, a, UPLO="L", **kw):
    w, v = ans
    items = g.items if hasattr(g, "items") and not isinstance(g, (tuple, list)) else dict(list(enumerate(g)))
    gw, gv = items.get(0), items.get(1)
    out = np.zeros(np.shape(a))
    if gw is not None:
        out = out + v @ (np.asarray(gw)[..., None] * _T(v))
    if gv is not None:
        diff = w[..., None, :] - w[..., :, None]
        off = np.eye(w.shape[-1], dtype=bool)
        f = np.where(off, 0.0, 1.0 / np.where(off, 1.0, diff))
        out = out + v @ (f * (_T(v) @ gv)) @ _T(v)
    # numpy reads one triangle (UPLO) and mirrors it: an entry of that triangle off
    # the diagonal stands for two entries of the symmetric matrix, the other
    # triangle is not read at all.
    sym = 0.5 * (out + _T(out))
    both = sym + _T(sym) - sym * np.eye(sym.shape[-1])
    return np.tril(both) if kw.get("UPLO", UPLO) == "L" else np.triu(both)


def _svd_pb(g, ans, a, full_matrices=True, compute_uv=True, *args, **kw):
    full_matrices = kw.get("full_matrices", full_matrices)
    compute_uv = kw.get("compute_uv", compute_uv)
    a = np.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    if not compute_uv:
        u, s, vt = la.svd(a, full_matrices=False)
        return u @ (np.asarray(g)[..., None] * vt)
    if full_matrices and m != n:
        raise NoRuleError(la.svd, message="the rule covers full_matrices=False (or square "
                          "matrices)")
    u, s, vt = ans
    items = g.items if hasattr(g, "items") and not isinstance(g, (tuple, list)) else dict(list(enumerate(g)))
    gu, gs, gvt = items.get(0), items.get(1), items.get(2)
    u, vt = u[..., :, :k], vt[..., :k, :]
    v = _T(vt)
    gu = np.zeros(u.shape) if gu is None else np.asarray(gu)[..., :, :k]
    gv = np.zeros(v.shape) if gvt is None else _T(np.asarray(gvt)[..., :k, :])
    gs = np.zeros(s.shape) if gs is None else np.asarray(gs)
    s2 = s[..., None, :] ** 2 - s[..., :, None] ** 2
    eye = np.eye(k, dtype=bool)
    F = np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, s2))
    S = s[..., None, :] * np.eye(k)
    Sinv = np.eye(k) / np.where(s == 0, 1.0, s)[..., None, :]
    ut_gu = _T(u) @ gu
    vt_gv = _T(v) @ gv
    out = u @ (gs[..., None] * np.eye(k)) @ vt
    out = out + u @ (F * (ut_gu - _T(ut_gu)) @ S) @ vt
    out = out + (np.eye(m) - u @ _T(u)) @ gu @ Sinv @ vt
    out = out + u @ (S @ (F * (vt_gv - _T(vt_gv)))) @ vt
    out = out + u @ Sinv @ _T(gv) @ (np.eye(n) - v @ vt)
    return out


def _pinv_pb(g, ans, a, *args, **kw):
    if args or kw:
        raise NoRuleError(la.pinv, message="the rule covers the default rcond")
    p = ans
    pt = _T(p)
    a = np.asarray(a)
    m, n = a.shape[-2:]
    return (-pt @ g @ pt
            + (np.eye(m) - a @ p) @ _T(g) @ p @ pt
            + pt @ p @ _T(g) @ (np.eye(n) - p @ a))


def _norm_pb(g, ans, x, ord=None, axis=None, keepdims=False, **kw):
    ord, axis = kw.get("ord", ord), kw.get("axis", axis)
    keepdims = kw.get("keepdims", keepdims)
    x = np.asarray(x)
    matrix = isinstance(axis, tuple) and len(axis) == 2 or axis is None and x.ndim == 2 \
        and ord is not None
    g = np.asarray(g)
    a = np.asarray(ans)
    if axis is not None and not keepdims:
        axes = axis if isinstance(axis, tuple) else (axis,)
        g = np.expand_dims(g, sorted([ax % x.ndim for ax in axes]))
        a = np.expand_dims(a, sorted([ax % x.ndim for ax in axes]))
    elif axis is None and not keepdims:
        g = g.reshape((1,) * x.ndim)
        a = a.reshape((1,) * x.ndim)
    if matrix:
        if ord not in (None, "fro"):
            if ord == "nuc":
                ax = axis if axis is not None else (0, 1)
                xm = np.moveaxis(x, ax, (-2, -1))
                u, s, vt = la.svd(xm, full_matrices=False)
                return g * np.moveaxis(u @ vt, (-2, -1), ax)
            raise NoRuleError(la.norm, message=f"the rule covers matrix norms 'fro' and "
                              f"'nuc', not ord={ord!r}")
        return g * x / np.where(a == 0, 1.0, a)
    if ord is None or ord == 2:
        return g * x / np.where(a == 0, 1.0, a)
    if ord == 1:
        return g * np.sign(x)
    if ord == np.inf or ord == -np.inf:
        mask = np.abs(x) == a
        return g * np.sign(x) * mask / mask.sum(axis=axis, keepdims=True)
    if ord == 0:
        return np.zeros(x.shape)
    return g * np.sign(x) * np.abs(x) ** (ord - 1) / np.where(a == 0, 1.0, a) ** (ord - 1)


def _real_only(fn, pb):
    """`pb` for real matrices only: its formula has no conjugates, so a complex
    argument is refused (a wrong gradient otherwise)."""
    def checked(g, ans, a, *args, **kw):
        if np.iscomplexobj(a):
            raise NoRuleError(fn, message="the rule covers real matrices, not complex ones")
        return pb(g, ans, a, *args, **kw)
    return checked


# inv, solve, det and eig are holomorphic formulas: right for complex matrices too
# (autograd's convention, tracer.ad.adjoints.unbroadcast).
defrule(la.inv, _inv_pb)
defrule(la.solve, _solve_a, _solve_b)
defrule(la.det, _det_pb)
defrule(la.eig, _eig_pb)
defrule(la.slogdet, _real_only(la.slogdet, _slogdet_pb))
defrule(la.cholesky, _real_only(la.cholesky, _cholesky_pb))
defrule(la.eigh, _real_only(la.eigh, _eigh_pb), keywords=("UPLO",))
defrule(la.svd, _real_only(la.svd, _svd_pb), keywords=("full_matrices", "compute_uv"))
defrule(la.pinv, _real_only(la.pinv, _pinv_pb))
defrule(la.norm, _real_only(la.norm, _norm_pb), keywords=("ord", "axis", "keepdims"))
