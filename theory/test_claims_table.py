"""`bornbiased theory`: the table runs end to end and every simulation agrees with its closed form."""

import json

from bornbiased_jax.cli import main
from bornbiased_jax.theory.claims import Claim


def test_claim_agreement_rule():
    c = Claim("x", "s", "p", 1.0, 1.03, 0.01, allowance=0.0)
    assert c.agrees  # 3 SE
    assert not Claim("x", "s", "p", 1.0, 1.05, 0.01).agrees  # 5 SE
    assert Claim("x", "s", "p", 1.0, 1.05, 0.01, allowance=0.02).agrees
    assert Claim("x", "s", "p", 1.0).agrees is None


def test_theory_cli_fast(tmp_path, capsys):
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
