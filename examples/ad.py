"""Gradients of a probabilistic model's log-density, through stochastic control flow.

`log_joint(theta, ys, seed)` is plain Python: a random walk whose noise regime
switches at random (a draw from `random.Random(seed)` compared with a switching
probability that depends on the parameters), observed with normal noise.  It
returns the log-density of the parameters, the regime choices it made and the
data.  `tracer.grad` differentiates it as written: the gradient follows the path
the call took (the choices are constants; their log-probabilities depend on the
parameters).  The same gradient comes from `tracer.backprop` on the nested trace,
and from central finite differences.  A few steps of gradient ascent then move the
parameters towards the maximum (the choices drawn with the same seed may change
with the parameters: a changed path is traced again, the others are reused).

Run:  python examples/ad.py          (the model)
      python examples/ad.py readme   (the README's short example)
"""

from __future__ import annotations

import math
import random
import sys

import numpy as np

import tracer

LOG_2PI = math.log(2 * math.pi)


def normal_logpdf(y, mean, sd):
    z = (y - mean) / sd
    return -0.5 * z * z - math.log(sd) - 0.5 * LOG_2PI


def regimes(r, p_switch, n, calm=True):
    """The regimes of n steps (True: calm), switching with probability p_switch, and
    the log-probability of those choices.  Recursive: one step per call."""
    if n == 0:
        return [], 0.0
    if r.random() < p_switch:
        calm, lp = not calm, math.log(p_switch)
    else:
        lp = math.log(1.0 - p_switch)
    rest, lp_rest = regimes(r, p_switch, n - 1, calm)
    return [calm] + rest, lp + lp_rest


def log_joint(theta, ys, seed):
    drift, log_noise, logit_switch = theta
    r = random.Random(seed)
    noise = math.exp(log_noise)
    p_switch = 1.0 / (1.0 + math.exp(-logit_switch))
    lp = normal_logpdf(drift, 0.0, 1.0) + normal_logpdf(log_noise, 0.0, 1.0)
    lp += normal_logpdf(logit_switch, -1.0, 1.0)
    calm, lp_choices = regimes(r, p_switch, len(ys))
    x = 0.0
    for y, is_calm in zip(ys, calm):
        x = x + drift
        lp += normal_logpdf(y, x, noise if is_calm else 3.0 * noise)
    return lp + lp_choices


YS = [0.4, 1.1, 1.2, 2.5, 2.4, 3.9, 3.1, 4.6, 5.2, 5.0]
SEED = 7


def finite_difference(f, theta, k, eps=1e-6):
    up = list(theta)
    down = list(theta)
    up[k] += eps
    down[k] -= eps
    return (f(tuple(up)) - f(tuple(down))) / (2 * eps)


def main() -> None:
    theta = (0.2, 0.0, -1.0)
    value_and_grad = tracer.value_and_grad(log_joint)
    lp, g = value_and_grad(theta, YS, SEED)
    print(f"log_joint{theta} = {lp:.6f}")
    print("gradient (tracer.grad):        ", "  ".join(f"{x:+.6f}" for x in g))
    fd = [finite_difference(lambda t: log_joint(t, YS, SEED), theta, k) for k in range(3)]
    print("gradient (finite differences): ", "  ".join(f"{x:+.6f}" for x in fd))
    root = tracer.track(log_joint, theta, YS, SEED)
    g_theta, _, _ = tracer.backprop(root)
    print("gradient (tracer.backprop):    ", "  ".join(f"{x:+.6f}" for x in g_theta))
    print(f"backprop wrote adjoints into the metadata of {_count_adjoints(root)} of "
          f"{len(root.trace)} nodes (the recursion of `regimes` included)")

    step = 0.004
    print(f"\ngradient ascent, step {step}:")
    for it in range(8):
        lp, g = value_and_grad(theta, YS, SEED)
        print(f"  step {it}: log_joint = {lp:9.4f}   theta = "
              + "  ".join(f"{x:+.4f}" for x in theta))
        theta = tuple(t + step * gi for t, gi in zip(theta, g))
    (runner,) = value_and_grad.paths.values()
    progs = [p for ps in runner.cache.values() for p in ps]
    print(f"{runner.traces} path(s) traced for {it + 2} gradient calls; the other calls "
          f"reused a traced path ({sum(p.compiled for p in progs)} compiled after "
          f"{tracer.ad.api.COMPILE_AFTER} reuses)")


def _count_adjoints(node) -> int:
    n = 1 if "adjoint" in node.metadata else 0
    for child in node.children:
        n += _count_adjoints(child)
    return n


# -- the README's example ---------------------------------------------------------------------
def f(x):
    return math.sin(x) + x


def h(x, n):
    i = 0
    while i < n:
        x = x * 1.1 + math.cos(x)
        i += 1
    return x


def loss(params, x, y):
    W, b = params
    p = 1 / (1 + np.exp(-(x @ W + b)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


def readme() -> None:
    print(tracer.grad(f)(1.0))                 # cos(1) + 1
    dh = tracer.grad(h)
    print(dh(0.5, 3), dh(0.7, 3), dh(0.5, 4))  # the third call takes another path
    x = np.array([[0.5, 1.0], [-1.0, 0.3], [2.0, -0.5]])
    y = np.array([1.0, 0.0, 1.0])
    gW, gb = tracer.grad(loss)((np.zeros(2), 0.0), x, y)
    print(gW, gb)

    root = tracer.track(f, 1.0)
    print(tracer.backprop(root))
    for node in root.children[1:]:
        print(f"@{node.index}", node.metadata["adjoint"])

    try:
        tracer.grad(lambda x: math.gamma(x) * x)(2.5)
    except tracer.NoRuleError as err:
        print(err)


if __name__ == "__main__":
    readme() if sys.argv[1:] == ["readme"] else main()
