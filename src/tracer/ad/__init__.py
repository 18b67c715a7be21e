"""Reverse-mode automatic differentiation of unmodified Python and numpy code.

`grad`, `value_and_grad` and `vjp` differentiate a function through its tape
(tracer.tapes): one pullback rule per primitive (`tracer.ad.rules`, extended with
`@tracer.rule(fn)`), a reverse sweep generated as Python code over the ops on the
path from the inputs to the result (`tracer.ad.program`), reused while the tape's
guards hold.  `backprop(root)` runs the sweep on a nested trace from `tracer.track`
and writes each node's adjoint into `node.metadata["adjoint"]` (IRTracker's
"following back the references from the last return").
"""

from __future__ import annotations

from . import numpy_rules as _numpy_rules  # noqa: F401  (registers the numpy rules)
from . import numpy_extra as _numpy_extra  # noqa: F401  (and the rest of numpy's)
from . import linalg_rules as _linalg_rules  # noqa: F401  (and numpy.linalg's)
from . import python_rules as _python_rules  # noqa: F401  (registers the Python rules)
from .api import grad, value_and_grad, vjp
from .backprop import backprop
from .derived import hessian, jacfwd, jacobian, jvp
from .errors import NoRuleError
from .rules import rule

__all__ = ["grad", "value_and_grad", "vjp", "backprop", "rule", "NoRuleError",
           "jacobian", "hessian", "jvp", "jacfwd"]
