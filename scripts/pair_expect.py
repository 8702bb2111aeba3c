"""A pair's figures on prompts it never saw, per kind (chat, code): the source of the page's line.

    python scripts/pair_expect.py --preset smollm2                    # acceptance only: any machine
    python scripts/pair_expect.py --preset smollm2 --write            # ... into assets/models/smollm2-draft/expect.json
    python scripts/pair_expect.py --preset bundled --write            # the bundled pair: code only
    python scripts/pair_expect.py --preset smollm2 --speedup --write  # QUIET MACHINE ONLY: adds the speedups
    python scripts/pair_expect.py --preset smollm2 --draft /tmp/candidate   # another draft for the same target

Greedy, the preset's k (3 for SmolLM2; --k to change), 96 new tokens, on benchmarks/unseen-prompts.json
(prompts used for nothing but figures; --prompts for others). Acceptance a = accepted / judged drafts
per kind, pooled over its prompts (specviz/bench/expect.py), deterministic for a given draft step
(the record names it; SPECVIZ_DRAFT_STEP=fp32 or int8 pins it). --speedup times plain and speculative
decoding in rotation (--repeats, median), as `python -m specviz bench` does. --write writes the record as
the draft folder's expect.json, which the page reads (specviz/models/expect.py); its fingerprint ties it
to the draft's weights, so new weights need a new measurement.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specviz import SpecConfig  # noqa: E402
from specviz.bench import expect  # noqa: E402
from specviz.errors import SpecvizError  # noqa: E402
from specviz.models.expect import preset_draft_folder, write_expect  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import get_preset  # noqa: E402


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="smollm2", help="the pair (its target; its draft unless --draft)")
    ap.add_argument("--draft", default=None, help="a draft folder for the preset's target (default: the preset's)")
    ap.add_argument("--prompts", nargs="+", default=expect.FIGURES_PROMPTS, help="prompt files (kind chat/code)")
    ap.add_argument("--k", type=int, default=None, help="drafts per round (default: the preset's)")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--speedup", action="store_true", help="also time plain against speculative (quiet machine only)")
    ap.add_argument("--repeats", type=int, default=3, help="with --speedup: timed rotations per prompt (median)")
    ap.add_argument("--write", action="store_true", help="write the draft folder's expect.json")
    ap.add_argument("--out", default=None, help="also write the record (with per-prompt rows) to this JSON file")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        preset = get_preset(args.preset)
        draft = Path(args.draft) if args.draft else preset_draft_folder(preset)
        if draft is None or not draft.is_dir():
            raise SpecvizError(f"no draft folder for {args.preset}: give one with --draft")
        prompts = expect.kind_prompts(args.prompts, preset.chat)
        if not prompts:
            raise SpecvizError(f"no chat or code prompts in {', '.join(args.prompts)} for {args.preset}")
        cfg = SpecConfig(k=args.k or preset.k, temperature=0.0, max_new_tokens=args.max_new_tokens,
                         confidence_stop=preset.confidence_stop)
        pair = load_pair(preset.target, str(draft))
        figures = expect.measure(pair, prompts, cfg, speedup=args.speedup, repeats=args.repeats,
                                 log=lambda line: print(line, file=sys.stderr))
    except SpecvizError as err:
        print(f"pair_expect: {err}", file=sys.stderr)
        return 2
    again = expect.command(args.preset, args.prompts, args.max_new_tokens, expect.relative(draft) if args.draft else None,
                           args.k, args.repeats if args.speedup else None)
    rec = expect.record(args.preset, draft, args.prompts, cfg, figures, again)
    print(f"{args.preset} with {expect.relative(draft)} (draft {rec['draft_fingerprint']}), k = {cfg.k}, greedy, "
          f"{cfg.max_new_tokens} new tokens, draft step {rec['draft_step']}:")
    for line in expect.lines(figures):
        print("  " + line)
    if args.out:
        Path(args.out).write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.write:
        print(f"wrote {expect.relative(write_expect(draft, rec))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
