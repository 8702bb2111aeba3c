"""Ship a new draft only if it beats the current one on prompts neither was trained on.

    python scripts/draft_gate.py --candidate .specviz-train/smollm2-cont/draft \\
        --work-dir .specviz-train/smollm2-cont                      # the candidate's training prompts
    python scripts/draft_gate.py --candidate DIR --work-dir WORK --ship   # on a pass: replace the current draft

Both drafts (--current: assets/models/smollm2-draft by default) run greedy at the preset's k, 96 new tokens,
on the gate's prompts (benchmarks/heldout-prompts.json by default: the tuning set, which chooses drafts and
reports no figure). The candidate passes only if its chat acceptance is higher than the current draft's and
its code acceptance is not lower (specviz/training/draft_gate.py). Exit code 0 on a pass, 1 otherwise, 2 on a
mistake. With --work-dir (once per training work folder) and --store (the committed on-policy store the
train stage read), the gate and figures prompts the candidate trained on are left out, each named, and the
gate refuses when a kind keeps fewer than half its prompts; without either that check is skipped, and said so.
--ship, on a pass: the candidate's files replace the current folder, its expect.json is measured on the
figures prompts (benchmarks/unseen-prompts.json: used for nothing else, so the page's figure is not the one
that chose it) and written, and the SHA256SUMS beside the folder is updated where it lists the folder.
"""
from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz import SpecConfig  # noqa: E402
from specviz.bench import expect  # noqa: E402
from specviz.training import draft_gate  # noqa: E402
from specviz.errors import SpecvizError  # noqa: E402
from specviz.models.expect import preset_draft_folder  # noqa: E402
from specviz.models.loading import load_pair, load_tokenizer  # noqa: E402
from specviz.models.presets import all_presets, get_preset  # noqa: E402
from specviz.paths import MODELS  # noqa: E402

GATE_PROMPTS = ["benchmarks/heldout-prompts.json"]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candidate", required=True, help="the new draft's folder")
    ap.add_argument("--current", default=str(MODELS / "smollm2-draft"), help="the shipped draft's folder")
    ap.add_argument("--preset", default=None, help="the pair whose target both drafts serve (default: the "
                    "preset whose draft is --current)")
    ap.add_argument("--prompts", nargs="+", default=GATE_PROMPTS, help="the gate's prompt files (kind chat/code)")
    ap.add_argument("--figures-prompts", nargs="+", default=expect.FIGURES_PROMPTS,
                    help="with --ship: the prompts the shipped expect.json is measured on")
    ap.add_argument("--work-dir", action="append", default=[], help="a training work folder of the candidate "
                    "(its prompts.json): refuse if it trained on a gate prompt (repeat for several)")
    ap.add_argument("--store", default=None, help="the on-policy store the candidate trained on (e.g. "
                    "data/onpolicy/smollm2): its prompts count as training prompts too")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--ship", action="store_true", help="on a pass, replace the current draft with the candidate")
    return ap


def preset_of(current: Path, key: str | None):
    if key:
        return get_preset(key)
    for preset in all_presets().values():
        folder = preset_draft_folder(preset)
        if folder is not None and folder.resolve() == current.resolve():
            return preset
    raise SpecvizError(f"no preset has the draft {current}: name the pair with --preset")


def measured(preset, folder: Path, prompts: list[dict], cfg: SpecConfig, name: str) -> dict:
    print(f"measuring the {name} draft ({expect.relative(folder)}) on {len(prompts)} prompts ...", file=sys.stderr)
    pair = load_pair(preset.target, str(folder))
    try:
        return expect.measure(pair, prompts, cfg, log=lambda line: print("  " + line, file=sys.stderr))
    finally:
        del pair
        gc.collect()


def training_check(args, preset, prompts: list[dict], figures_prompts: list[dict]):
    """(gate prompts, figures prompts) the candidate never trained on, each left-out one named; None when a
    kind would keep fewer than half its prompts."""
    if not args.work_dir and not args.store:
        print("note: no --work-dir or --store given: not checked whether the candidate trained on a gate prompt")
        return prompts, figures_prompts
    trained = [t for folder in args.work_dir for t in draft_gate.training_prompts(folder)]
    if args.store:
        tokenizer = load_tokenizer(preset.target)
        trained += draft_gate.store_prompts(args.store, tokenizer.decode)
    kept = []
    for name, group in (("gate", prompts), ("figures", figures_prompts)):
        mine, left_out, refused = draft_gate.untrained(group, trained)
        for text in left_out:
            print(f"left out: the candidate trained on the {name} prompt {text[:70]!r}")
        if refused:
            print(f"REFUSED: {refused} ({name} prompts)")
            return None
        kept.append(mine)
    print(f"checked against the candidate's {len(trained)} training prompts: {len(kept[0])} of {len(prompts)} gate "
          f"prompts kept" + (f", {len(kept[1])} of {len(figures_prompts)} figures prompts" if figures_prompts else ""))
    return kept[0], kept[1]


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    candidate, current = Path(args.candidate), Path(args.current)
    try:
        for folder in (candidate, current):
            if not (folder / "config.json").is_file():
                raise SpecvizError(f"{folder}: not a draft folder (no config.json)")
        preset = get_preset(args.preset) if args.preset else preset_of(current, None)
        prompts = expect.kind_prompts(args.prompts, preset.chat)
        figures_prompts = expect.kind_prompts(args.figures_prompts, preset.chat) if args.ship else []
        if not prompts:
            raise SpecvizError(f"no chat or code prompts in {', '.join(args.prompts)} for {preset.key}")
        checked = training_check(args, preset, prompts, figures_prompts)
        if checked is None:
            return 1
        prompts, figures_prompts = checked
        cfg = SpecConfig(k=preset.k, temperature=0.0, max_new_tokens=args.max_new_tokens,
                         confidence_stop=preset.confidence_stop)
        new = measured(preset, candidate, prompts, cfg, "candidate")
        old = measured(preset, current, prompts, cfg, "current")
    except (SpecvizError, OSError, ValueError) as err:
        print(f"draft_gate: {err}", file=sys.stderr)
        return 2
    print(f"{preset.key}, k = {cfg.k}, greedy, {cfg.max_new_tokens} new tokens, on {', '.join(args.prompts)} "
          f"(draft steps: candidate {', '.join(new['draft_step']) or '-'}, current {', '.join(old['draft_step']) or '-'})")
    print(draft_gate.table(new["kinds"], old["kinds"]))
    passed, reasons = draft_gate.verdict(new["kinds"], old["kinds"])
    for line in reasons:
        print("  " + line)
    print("PASS: the candidate beats the current draft" if passed else "FAIL: the current draft stays")
    if passed and args.ship:
        figures = measured(preset, candidate, figures_prompts, cfg, "candidate (figures prompts)")
        command = expect.command(preset.key, args.figures_prompts, args.max_new_tokens)
        record = expect.record(preset.key, candidate, args.figures_prompts, cfg, figures, command)
        where = draft_gate.ship(candidate, current, record)
        print(f"shipped: {expect.relative(where)} now holds the candidate, with its expect.json; "
              + "; ".join(expect.lines(figures)))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
