"""How far a pair's draft can carry greedy speculative decoding, counted rather than timed.

For each prompt: the target's greedy continuation (transformers' generate()), then one draft pass over
prompt + continuation, which gives the draft's top two tokens at every position of the true prefix.
Greedy rounds are then replayed by counting (a draft is accepted while it equals the target's token):

- chain k: the engine's rounds (its measured tokens per round should match the count);
- chain k + siblings: each depth's second choice verified too, in the same target pass (a tree of
  width two: no extra draft step, k more tokens in the pass); where the first choice misses and the
  second hits, the round gains that token and the target's bonus after it.

    python scripts/draft_headroom.py --preset smollm2 --prompts benchmarks/heldout-prompts.json
    python scripts/draft_headroom.py --preset smollm2 --draft /tmp/smollm2-draft-more   # a candidate draft
    SPECVIZ_DRAFT_STEP=fp32 python scripts/draft_headroom.py --preset smollm2   # the draft's fp32 weights

Prints the draft's top-1 agreement, how often its second choice is the target's token, tokens per
round (with the tokens a verify pass holds) for k = 2..5 with and without siblings, and where the misses
are (the draft's agreement by the target's own confidence; how many misses a copy of the token that
followed the same token earlier in the context could have found: that token may have led elsewhere too), as JSON lines.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from specviz import SpecConfig  # noqa: E402
from specviz.models.loading import load_pair  # noqa: E402
from specviz.models.presets import get_preset  # noqa: E402
from specviz.bench.prompts import load_prompts, prompt_ids  # noqa: E402
from specviz.bench.runner import hf_generate  # noqa: E402
from specviz.runtime.cached_model import cached_model  # noqa: E402


def hits(pair, prompts, new_tokens: int) -> tuple[list[list[bool]], list[list[bool]], list[dict]]:
    """Per prompt and position: is the draft's first choice the target's token; is its second? And per
    position, what kind of miss it is (`where`): the target's own probability of its token, and whether
    that token followed the same previous token earlier in prompt + text (a copy would have found it)."""
    first, second, where = [], [], []
    with torch.inference_mode():
        for p in prompts:
            ids = prompt_ids(pair, p)
            continuation = hf_generate(pair, ids, SpecConfig(max_new_tokens=new_tokens))   # greedy
            sequence = torch.tensor([ids + continuation[:-1]], device=pair.device)
            # Row i of the draft's logits predicts continuation[i] from the true prefix before it. The
            # draft runs as the engine steps it (on a CPU, the lean step and the weights chosen there).
            lm = cached_model(pair.draft, pair.vocab_size, positions=sequence.shape[1], draft=True)
            logits = lm.feed(sequence[0], keep=len(continuation))
            top2 = logits.topk(2, -1).indices.tolist()
            first.append([t[0] == c for t, c in zip(top2, continuation)])
            second.append([t[1] == c for t, c in zip(top2, continuation)])
            # The target's probability of the token it chose (its greedy argmax) at each position.
            probs = pair.target(sequence).logits[0, -len(continuation):].float().softmax(-1)
            sure = probs.max(-1).values.tolist()
            text = ids + continuation
            for i, token in enumerate(continuation):
                at = len(ids) + i
                before = text[:at]
                copyable = any(before[j] == before[-1] and before[j + 1] == token for j in range(len(before) - 1))
                where.append({"sure": sure[i], "copyable": copyable, "hit": first[-1][i]})
    return first, second, where


def misses(where: list[dict]) -> list[dict]:
    """Agreement by the target's confidence, and how many misses a bigram copy from the context holds."""
    rows = []
    for low, high in ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.01)):
        band = [w for w in where if low <= w["sure"] < high]
        rows.append({"target_p": f"{low:.1f}-{min(high, 1.0):.1f}", "share": round(len(band) / len(where), 3),
                     "draft_top1": round(sum(w["hit"] for w in band) / max(len(band), 1), 3)})
    missed = [w for w in where if not w["hit"]]
    rows.append({"misses": len(missed), "copyable_misses": sum(w["copyable"] for w in missed),
                 "note": "copyable: the target's token followed the same previous token earlier in prompt + text"})
    return rows


def replay(first, second, k: int, siblings: bool) -> tuple[float, float]:
    """(tokens per round, tokens per verify pass) of greedy rounds replayed on the counted hits."""
    tokens = rounds = verified = 0
    for h1, h2 in zip(first, second):
        t = 0
        while t < len(h1):
            rounds += 1
            verified += k + 1 + (k if siblings else 0)
            n = 0
            while n < k and t + n < len(h1) and h1[t + n]:
                n += 1                                   # drafts accepted until the first miss
            gained = n + 1                               # ... plus the correction or the bonus
            if siblings and n < k and t + n < len(h2) and h2[t + n]:
                gained = n + 2                           # the sibling is the target's token, then its bonus
            tokens += gained
            t += gained
    return tokens / rounds, verified / rounds


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="smollm2")
    ap.add_argument("--prompts", default="benchmarks/heldout-prompts.json")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--draft", default=None, help="another draft for the preset's target (default: the preset's)")
    args = ap.parse_args()
    preset = get_preset(args.preset)
    pair = load_pair(preset.target, args.draft or preset.draft, device="auto")
    first, second, where = hits(pair, load_prompts(args.prompts), args.max_new_tokens)
    positions = sum(map(len, first))
    print(json.dumps({"positions": positions, "top1_agreement": round(sum(map(sum, first)) / positions, 3),
                      "second_choice_is_target": round(sum(map(sum, second)) / positions, 3)}))
    for k in range(2, 6):
        for siblings in (False, True):
            tau, n = replay(first, second, k, siblings)
            print(json.dumps({"k": k, "siblings": siblings, "tokens_per_round": round(tau, 3),
                              "tokens_per_verify_pass": round(n, 2)}))
    for row in misses(where):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
