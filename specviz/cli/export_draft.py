"""`python -m specviz export-draft --out DIR`: the shipped SmolLM2 draft as a plain Llama folder (export_draft.py)."""
from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("export-draft", help="write a preset's draft as a plain Llama folder that vLLM or transformers "
                                            "loads (its target's embedding and a tied full-vocabulary head)")
    p.add_argument("--out", required=True, help="the folder to write")
    p.add_argument("--preset", default="smollm2", help="the pair whose draft to export (default: smollm2)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..errors import ConfigError
    from ..models.borrowed_draft import BorrowedDraftForCausalLM
    from ..models.export_draft import export_draft
    from ..models.presets import get_preset, load_preset

    preset = get_preset(args.preset)
    pair = load_preset(args.preset, device="cpu", dtype="float32")
    if not isinstance(pair.draft, BorrowedDraftForCausalLM):
        raise ConfigError(f"the {args.preset} draft is already a plain model ({preset.draft}): load it as it is")
    print(export_draft(pair.draft, preset.draft, args.out))
    return 0
