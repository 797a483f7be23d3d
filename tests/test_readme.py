"""The README's Python example runs as written (on the tiny preset, to stay fast); commands the
docs quote are the ones the code prints."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    api = [b for b in blocks if 'get_preset("gpt2-rope-cpu")' in b]
    assert len(api) == 1, "the README's Python API example is missing or ambiguous"
    code = api[0]
    ns: dict = {}
    exec(code.replace('get_preset("gpt2-rope-cpu")', 'get_preset("gpt2-rope-tiny")'), ns)
    cfg = ns["cfg"]
    assert ns["out"].logits.shape == (64, cfg.vocab_size)
    assert ns["out"].hidden.shape == (cfg.n_layers + 1, 64, cfg.d_model)
    assert ns["preds"].shape == (4, 200)
    assert ns["preds_42"].shape == (200,)


def test_docs_seed_family_command_is_the_librarys():
    """docs/lineage.md quotes the seed family's training command as the library builds it (what
    `python -m experiments.seed_family --print-command` prints)."""
    import shlex

    from experiments.lineage import seed_family

    text = (README.parent / "docs" / "lineage.md").read_text()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", text, re.S)
                 if "runs/seed-family/seeds-0-32" in b)
    quoted = shlex.split(block.replace("\\\n", " "))
    assert shlex.split(seed_family.command()) == quoted


def test_citation_and_license_match_the_package():
    """CITATION.cff cites this version of the package (and the paper, by its title), and
    LICENSE is the Apache License 2.0 that pyproject.toml names."""
    import tomllib

    root = README.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    cff = (root / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", cff, re.M)
    assert re.search(rf'^title: "{project["name"]}"$', cff, re.M)
    assert re.search(rf'^version: "{re.escape(project["version"])}"$', cff, re.M)
    assert re.search(rf"^license: {project['license']}$", cff, re.M)
    assert "Transformers Are Born Biased" in cff
    license_text = (root / "LICENSE").read_text()
    assert project["license"] == "Apache-2.0"
    assert "Apache License\n                           Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
