"""The README's Python example runs as written (on the tiny preset, to stay fast)."""

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
