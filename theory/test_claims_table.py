"""`bornbiased theory`: the table runs end to end and every simulation agrees with its closed form."""

import dataclasses
import json

import pytest

from bornbiased_jax.cli import main
from bornbiased_jax.theory import claims
from bornbiased_jax.theory.claims import TheoryClaim
from bornbiased_jax.verdicts import DIFFERS, HOLDS


def test_claim_agreement_rule():
    c = TheoryClaim("x", "s", "p", 1.0, 1.03, 0.01, allowance=0.0)
    assert c.agrees  # 3 SE
    assert not TheoryClaim("x", "s", "p", 1.0, 1.05, 0.01).agrees  # 5 SE
    assert TheoryClaim("x", "s", "p", 1.0, 1.05, 0.01, allowance=0.02).agrees
    assert TheoryClaim("x", "s", "p", 1.0).agrees is None


@pytest.mark.slow
def test_theory_cli_fast(tmp_path, capsys, monkeypatch, sims):
    # The real command and table; its simulations are shared with the per-claim tests that make
    # the same calls (theory/conftest.py), so they run once per session.
    monkeypatch.setattr(claims, "simulate", sims)
    out = tmp_path / "theory.json"
    assert main(["theory", "--fast", "--json", str(out)]) == 0
    recs = json.loads(out.read_text())["records"]
    for r in recs:
        for field in ("claim", "paper", "closed_form", "simulated", "se", "verdict"):
            assert field in r
        assert r["agrees"] in (True, None), r
    verdicts = {r["verdict"] for r in recs}
    assert {"holds", "corrected", "beyond the paper"} <= verdicts
    assert "| claim | where | paper |" in capsys.readouterr().out


def test_theory_cli_fails_when_a_simulation_disagrees(tmp_path, capsys, monkeypatch):
    ok = TheoryClaim("agrees", "s", "p", 1.0, 1.0, 0.01)
    off = TheoryClaim("off by 10 SE", "s", "p", 1.0, 1.1, 0.01).finish()
    asked = []
    monkeypatch.setattr(claims, "build_claims", lambda fast=False: asked.append(fast) or [ok, off])
    out = tmp_path / "theory.json"
    assert main(["theory", "--json", str(out)]) == 1
    assert asked == [False]
    assert "simulation disagrees with the closed form for: ['off by 10 SE']" in (
        capsys.readouterr().out)
    recs = json.loads(out.read_text())["records"]
    assert [r["verdict"] for r in recs] == [HOLDS, DIFFERS]
    assert recs[1] == dict(dataclasses.asdict(off), agrees=False)
