"""``bornbiased presets``: the model presets, a family crossed with a size, and their shapes.

Reads ``bornbiased_jax.presets.PRESETS`` alone (no JAX), so it answers at once."""

from __future__ import annotations

from bornbiased_jax.commands.arguments import command_parser

COLUMNS = ("preset", "family", "size", "d_model", "layers", "heads", "kv heads", "d_ff",
           "vocab", "context")


def add_parser(sub) -> None:
    p = command_parser(
        sub, "presets", help="list the model presets (family x size) and their shapes",
        description="The model presets that --preset and the model source "
                    "preset:NAME@SEED name: a family (gpt2-rope, llama2, qwen2) crossed with a "
                    "size (tiny for tests, cpu for first runs on a laptop, small, nano for the "
                    "paper's 12-layer models, 1.2b for its large GPT-2), and released models' "
                    "shapes. 'kv heads' below the heads means grouped-query attention.",
        examples=["bornbiased presets",
                  "bornbiased presets --family llama2"])
    p.add_argument("--family", metavar="NAME",
                   help="show only the presets whose name starts with NAME")
    p.set_defaults(run=run)


def rows(family: str | None = None) -> list[tuple]:
    """One row per preset (the table's :data:`COLUMNS`), by family and then by size."""
    from bornbiased_jax.presets import PRESET_FAMILIES, PRESET_SIZES, PRESETS

    def family_size(name: str) -> tuple[str, str]:
        for fam in PRESET_FAMILIES:
            if name.startswith(fam + "-") and name[len(fam) + 1:] in PRESET_SIZES:
                return fam, name[len(fam) + 1:]
        return "-", "-"  # a released model's shape

    def order(name: str):
        fam, size = family_size(name)
        known = fam in PRESET_FAMILIES
        return (not known, PRESET_FAMILIES.index(fam) if known else 0,
                PRESET_SIZES.index(size) if known else 0, name)

    out = []
    for name in sorted(PRESETS, key=order):
        if family and not name.startswith(family):
            continue
        cfg = PRESETS[name]
        out.append((name, *family_size(name), cfg.d_model, cfg.n_layers, cfg.n_heads,
                    cfg.resolved_n_kv_heads, cfg.d_ff, cfg.vocab_size, cfg.max_seq_len))
    return out


def table(table_rows: list[tuple]) -> str:
    """``table_rows`` as aligned plain text: names left, numbers right."""
    cells = [COLUMNS] + [tuple(f"{v:,}" if isinstance(v, int) else str(v) for v in r)
                         for r in table_rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    lines = []
    for r in cells:
        lines.append("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return "\n".join(lines)


def run(args) -> int:
    from bornbiased_jax.errors import UserError

    found = rows(args.family)
    if not found:
        raise UserError(f"no preset's name starts with {args.family!r}; "
                        f"'bornbiased presets' lists them all")
    print(table(found))
    return 0
