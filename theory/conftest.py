"""Simulations shared by the theory tests.

The theory table (``bornbiased theory``) and the per-claim tests compare closed forms with the
same finite-width simulations. A simulator is a deterministic function of its arguments, so
:class:`SharedSimulations` runs each distinct call once per test session and hands the same
result to every test that makes that call: the table's test and a per-claim test asking for the
table's simulation share one run instead of drawing the same networks twice.
"""

import inspect

import pytest

from bornbiased_jax.theory import simulate


class SharedSimulations:
    """``simulate``'s functions, each distinct call (arguments bound to the signature, defaults
    filled in) computed once."""

    def __init__(self):
        self._results = {}

    def __getattr__(self, name):
        fn = getattr(simulate, name)
        if not callable(fn):
            return fn
        sig = inspect.signature(fn)

        def call(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            key = (name, tuple(bound.arguments.items()))
            if key not in self._results:
                self._results[key] = fn(*args, **kwargs)
            return self._results[key]

        return call


@pytest.fixture(scope="session")
def sims():
    return SharedSimulations()
