"""Probabilistic programs: the random choices of a plain Python model.

    import random, tracer.ppl as ppl

    def model(r):
        mu = r.gauss(0.0, 10.0)
        return [r.gauss(mu, 1.0) for _ in range(3)]

    t = ppl.trace(model, random.Random(0))      # a ChoiceTrace
    t.choices                                    # address -> Choice(value, distribution, params, logp, node)
    t.log_joint
    ppl.condition(model, {"model/gauss@L4": 1.0}, random.Random(1))
    new, weight, discard = ppl.update(t, {"model/gauss@L4": 0.5})

Draws are found as calls of known samplers (random.Random and numpy's sampling
methods, the random and numpy.random functions, functions declared with
`@ppl.sampler(logpdf)`); log-densities come from scipy.stats (`pip install
'tracer[ppl]'`).  Addresses: tracer.ppl.address.
"""

from .address import Address, parse
from .choices import Choice, ChoiceTrace
from .compare import ChoiceDiff, diff
from .run import condition, do, replay, trace, update
from .samplers import UnknownSamplerError, sample, sampler

__all__ = ["trace", "replay", "condition", "do", "update", "sample", "sampler", "diff",
           "Choice", "ChoiceTrace", "ChoiceDiff", "Address", "parse", "UnknownSamplerError"]
