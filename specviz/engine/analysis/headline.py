"""The race's headline: one line that is true for this run, whatever it was.

A speedup is a ratio of rates (tokens per second on each lane's own clock, metrics/measures.py). It
reads as "X times the speed" only when both lanes wrote the same text, which greedy decoding
guarantees (exactness): then the headline says so, with the target passes each lane made. Sampled
lanes write different samples of the same distribution, often of different lengths and for different
reasons (end of text against the token budget), so the headline states each lane's length, time and
stop reason, and compares them like for like: each lane's time to the shorter lane's token count
(measures.compared_speedup, from each token's time), said in the line. And a text that mostly repeats itself is easy
for any draft to guess (prompt lookup would guess it too): the headline says so, since such a
speedup says little about other text.

Repetition is measured as the share of generated tokens that continue an n-gram (n = REPEAT_N) that
already occurred earlier in the output with the same next token: exactly the tokens an n-gram
lookup over the output itself would have proposed correctly.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..metrics.measures import lane_speedup

REPEAT_N = 4               # the n-gram that predicts a repeated token
REPETITIVE_SHARE = 0.5     # above this share of predictable tokens, a text is called repetitive
STOPS = {"max_tokens": "reached the token budget", "eos": "ended its text", "stop_string": "hit a stop string",
         "cancelled": "was stopped", "length_limit": "reached the model's length limit"}


@dataclass(frozen=True)
class Headline:
    line: str                    # the headline itself
    same_text: bool | None       # both lanes wrote the same tokens (None when one lane was cut short)
    per_token: bool              # the speedup compares rates of different texts
    repeated_share: float        # share of the speculative text's tokens that repeat an earlier n-gram
    note: str                    # "" or more sentences (a greedy mismatch, then repetition)
    repetition: str = ""         # "" or the sentence on repetition alone (also in `note`)


def repeated_share(ids: list[int], n: int = REPEAT_N) -> float:
    """Share of tokens i >= n whose preceding n tokens occurred earlier followed by the same token."""
    if len(ids) <= n:
        return 0.0
    seen: dict[tuple[int, ...], set[int]] = {}
    hits = 0
    for i in range(n, len(ids)):
        key = tuple(ids[i - n:i])
        if ids[i] in seen.get(key, ()):
            hits += 1
        seen.setdefault(key, set()).add(ids[i])
    return hits / (len(ids) - n)


def _lane(name: str, done) -> str:
    tally = done.stats.tally
    return f"{name} {tally.tokens} tokens in {tally.elapsed_s:.2f} s ({STOPS.get(done.stop_reason, done.stop_reason)})"


def headline(spec_done, plain_done, greedy: bool, compared: tuple | None = None) -> Headline:
    """The headline of a race whose lanes ended with these two `Done` events. `compared`: (speedup, n) from
    measures.compared_speedup (RunStats.compared), n the tokens each lane was compared over (None: the
    whole lanes); without it the whole lanes' rate ratio."""
    spec_t, plain_t = spec_done.stats.tally, plain_done.stats.tally
    speedup, over = compared if compared is not None and compared[0] is not None else (
        lane_speedup(spec_t, plain_t), None)
    basis = ("per token" if over is None else
             f"like for like, each lane's time to its first {over} tokens (the shorter text's length)")
    share = repeated_share(spec_done.token_ids)
    repetition = ""
    if share > REPETITIVE_SHARE:
        repetition = (f"{share:.0%} of this text repeats what it already wrote, which any draft guesses easily: "
                      f"a speedup on repetitive text says little about other text.")
    cut = "cancelled" in (spec_done.stop_reason, plain_done.stop_reason)
    if speedup is None or cut:
        line = (f"Stopped: {_lane('speculative', spec_done)}; {_lane('plain', plain_done)}." if cut else
                "Not enough of a race to compare.")
        return Headline(line, None, False, share, repetition, repetition)
    if greedy:
        same = spec_done.token_ids == plain_done.token_ids
        passes, plain_passes = spec_t.rounds, plain_t.tokens
        if same:
            line = (f"Same text, {passes} target passes instead of {plain_passes}: "
                    f"{speedup:.2f}× the speed.")
            return Headline(line, True, False, share, repetition, repetition)
        first = next((i for i, (a, b) in enumerate(zip(spec_done.token_ids, plain_done.token_ids)) if a != b),
                     min(len(spec_done.token_ids), len(plain_done.token_ids)))
        mismatch = (f"The two greedy texts differ from token {first + 1}: on this device the target's logits "
                    f"for a verify pass and for a single step round differently, and a near tie flipped.")
        line = (f"{_lane('Speculative', spec_done)}; {_lane('plain', plain_done)}: "
                f"{speedup:.2f}× the plain rate, {basis}.")
        return Headline(line, False, True, share, " ".join(x for x in (mismatch, repetition) if x), repetition)
    line = (f"{_lane('Speculative', spec_done)}; {_lane('plain', plain_done)}. Sampled lanes write different "
            f"texts from the same distribution, so they are compared {basis}: {speedup:.2f}× the plain rate.")
    return Headline(line, spec_done.token_ids == plain_done.token_ids, True, share, repetition, repetition)
