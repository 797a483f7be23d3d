"""The README's Python example runs as written (on the tiny preset, to stay fast); commands the
docs quote are the ones the code prints."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
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

    from experiments.common import seed_family

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


def _section(title: str) -> str:
    """The README's text under ``## title``, up to the next ``## `` heading."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README.read_text(), re.S | re.M)
    assert m, f"README.md has no section '## {title}'"
    return m.group(1)


def test_readme_presets_table_is_the_configs():
    """The README's presets table (a row per size, a column per family) names every
    family-size preset of presets.PRESETS with its d_model / layers / heads, and the text
    beneath it every released model's shape, its vocabularies and KV heads: a preset added to
    the code must be added to the README."""
    from bornbiased_jax.presets import PRESET_FAMILIES, PRESET_SIZES, PRESETS

    text = _section("Presets")
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ")]
    header, body = rows[0], rows[1:]
    assert len(header) == 2 + len(PRESET_FAMILIES)
    named = set()
    for size, shape, *cells in body:
        d, layers, heads = (int(x.replace(",", "")) for x in shape.split(" / "))
        for family, cell in zip(PRESET_FAMILIES, cells):
            if cell == "-":
                assert f"{family}-{size.split()[0]}" not in PRESETS
                continue
            name = cell.strip("`")
            assert name == f"{family}-{size.split()[0]}", (size, family, cell)
            cfg = PRESETS[name]
            assert (cfg.d_model, cfg.n_layers, cfg.n_heads) == (d, layers, heads), name
            named.add(name)
    assert named == {f"{f}-{s}" for f in PRESET_FAMILIES for s in PRESET_SIZES} & set(PRESETS)
    kv = {f: {PRESETS[n].resolved_n_kv_heads == PRESETS[n].n_heads for n in named
              if n.startswith(f + "-")} for f in PRESET_FAMILIES}
    assert kv == {"gpt2-rope": {True}, "llama2": {True}, "qwen2": {False}}
    assert {PRESETS[n].resolved_n_kv_heads for n in named if n.startswith("qwen2-")} == {2}
    assert "Qwen2 (2 KV heads)" in header
    for family, label in zip(PRESET_FAMILIES, ("GPT-2", "LLaMA-2", "Qwen2")):
        assert f"{PRESETS[family + '-cpu'].vocab_size:,} ({label})" in text
        assert {PRESETS[n].vocab_size for n in named if n.startswith(family + "-")
                and not n.endswith("-tiny")} == {PRESETS[family + "-cpu"].vocab_size}
    assert {PRESETS[f"{f}-tiny"].vocab_size for f in PRESET_FAMILIES} == {512}
    assert "512 at `tiny`" in text
    for name in set(PRESETS) - named:
        c = PRESETS[name]
        kv = f"{c.resolved_n_kv_heads} KV head" + ("s" if c.resolved_n_kv_heads > 1 else "")
        assert (f"`{name}` is" in text and f"({c.d_model} / {c.n_layers} / {c.n_heads}, "
                f"{kv}, vocabulary {c.vocab_size:,})" in text), name


def _slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_of_the_readme_and_docs_resolve():
    """Every relative link in README.md, docs/*.md and benchmarks/README.md names a file that
    exists, and its #anchor a heading of that file."""
    root = README.parent
    pages = [README, *sorted((root / "docs").glob("*.md")), root / "benchmarks" / "README.md"]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.exists(), f"{page.relative_to(root)}: no file {target}"
            if anchor:
                slugs = {_slug(h) for h in re.findall(r"^#+ (.*)$", dest.read_text(), re.M)}
                assert anchor in slugs, f"{page.relative_to(root)}: no heading #{anchor} in {path}"
            checked += 1
    assert checked >= 40


def test_readme_reproduces_every_study_of_results():
    """*Reproducing the paper* gives, for every section of RESULTS.md that has a command, that
    command and a link to the section."""
    from experiments import render

    text = _section("Reproducing the paper")
    results = (README.parent / "RESULTS.md").read_text()
    for section in render.sections_of_studies():
        heading = re.search(rf"<!-- {section.name}:begin -->\n## (.*)$", results, re.M)
        assert heading, section.name
        if section.command:
            assert f"`{section.command}" in text, section.name
            assert f"(RESULTS.md#{_slug(heading.group(1))})" in text, section.name
    assert "(RESULTS.md#" + _slug(re.search(r"<!-- gpu_campaign:begin -->\n## (.*)$", results,
                                            re.M).group(1)) + ")" in text


def test_quick_start_output_is_the_saved_runs():
    """The quick start's table and time are those of the saved fresh-clone run
    (benchmarks/readme_recipes.py), not copied from an unsaved one."""
    report = (README.parent / "benchmarks" / "results" / "readme_recipes_cpu.md").read_text()
    m = re.search(r"^## The quick start's table\n\n(.*?)(?:\n\n|\Z)", report, re.S | re.M)
    assert m, "the saved report has no quick-start table"
    text = _section("Quick start")
    for row in m.group(1).strip().splitlines():
        assert row in text, row
    seconds = re.search(r"^## Block 0 \(Quick start\): exit 0, (\d+) s$", report, re.M)
    assert seconds and f"{int(seconds.group(1))} s" in text
