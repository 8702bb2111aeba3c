"""A finished race's "why faster / why slower" box: engine/analysis/ledger.py's Ledger as escaped HTML.

The verdict is styled by what it is, from a fixed table (faster: green ▲; about even: grey ≈;
slower: red ▼; unmeasured: grey ?; stopped: grey ■), so a loss never looks like a success. The
verdict's headline and the ledger's cause sentence are in the race's status, right under the
panes' title (view/handlers.py); this box holds where the time went: each lane's clock as a stacked
bar (draft steps, target passes, acceptance and sampling, everything else) with the seconds written
out, and the measured a, c, v beside the break-even a for this machine and k. Every number comes
from the Ledger; nothing here computes a figure.
"""
from __future__ import annotations

from ..app.run_records import DecodePath
from ..engine.analysis import ledger as ledger_mod
from ..runtime.lean_draft import format_of
from .render import clean

VERDICTS = {  # verdict -> (glyph, label); the CSS class is verdict-<key with spaces as dashes>
    "faster": ("▲", "Faster"),
    "about even": ("≈", "About even"),
    "slower": ("▼", "Slower"),
    "unmeasured": ("?", "Unmeasured"),
    "stopped": ("■", "Stopped"),
}
PHASES = (  # field -> (label, css class)
    ("draft_s", "draft steps", "ph-draft"),
    ("target_s", "target passes", "ph-target"),
    ("accept_s", "acceptance and sampling", "ph-accept"),
    ("other_s", "everything else", "ph-other"),
)


def verdict_class(verdict: str) -> str:
    return "verdict-" + (verdict if verdict in VERDICTS else "unmeasured").replace(" ", "-")


tallies = ledger_mod.race_tallies    # each lane's tally: the engine's own (Done.stats), else the page's fold


def build(stats, model=None, busy: str = ""):
    """The race's ledger, from its own two lanes (engine/analysis/ledger.of_race); `model`, the pair's cost
    model, rides along only as the labelled "typical here" prediction."""
    return ledger_mod.of_race(stats, model, busy, tallies(stats))


def path_line(stats) -> str:
    """How the lanes decoded, when it is not the plain eager path: "CUDA graphs, captured in N s"
    on a pair's first race (the one-time cost of the GPU path, runtime/graph_model.py), else that
    the graphs were already there; and how the draft stepped when not through transformers'
    forward (runtime/lean_draft.py). "" when both are eager."""
    dones = [d for d in stats.done.values() if d is not None]
    lines = []
    records = {DecodePath.parse(getattr(d, "decode_path", None)) for d in dones}
    paths = sorted(str(p) for p in records if not p.plain_eager)
    capture = sum(getattr(d, "capture_s", 0.0) or 0.0 for d in dones)
    if any(p.fell_back for p in records):     # the graph path closed: every step ran eagerly
        lines.append(f"Decode path: {', '.join(paths)}.")
    elif paths and capture > 0:
        lines.append(f"Decode path: {', '.join(paths)}, captured in {capture:.1f} s during this race: a one-time cost "
                     f"for this pair (counted on the lanes' clocks); later races replay the graphs.")
    elif paths:
        lines.append(f"Decode path: {', '.join(paths)} (captured in an earlier race: no capture cost in this one).")
    drafts = sorted({getattr(d, "draft_path", "") or "" for d in dones} - {"", "eager"})
    if drafts:
        why = sorted({getattr(d, "draft_format_by", "") or "" for d in dones} - {""})
        how = f" (the weights' format {'; '.join(why)})" if why else ""
        lines.append(f"Draft steps: {', '.join(_draft_words(p) for p in drafts)}, instead of transformers' "
                     f"forward{how}. The target decides the output either way.")
    return " ".join(lines)


def _draft_words(path: str) -> str:
    """A draft path in the page's words: runtime/lean_draft.py's "lean eager, int8 weights" is, to a
    visitor, a short loop over the draft's own layers with 8-bit weights."""
    fmt = format_of(path)
    if fmt is None:
        return path
    kind = {"int8": "8-bit integer (int8)", "fp32": "32-bit float (fp32)"}.get(fmt, fmt)
    return f"a short loop over the draft's own layers with {kind} weights"


def _num(x, fmt=".2f") -> str:
    return "—" if x is None else format(x, fmt)


def _bar(name: str, lane, scale: float) -> str:
    segments, words = [], []
    for field, label, css in PHASES:
        secs = getattr(lane, field)
        if field == "draft_s" and name == "plain":
            continue
        if field == "accept_s" and name == "plain":
            label = "sampling"
        share = secs / lane.total_s if lane.total_s else 0.0
        width = 100 * secs / scale if scale else 0.0
        tip = f"{name} lane, {label}: {secs:.3f} s ({share:.0%} of its {lane.total_s:.2f} s)"
        segments.append(f'<span class="seg {css}" style="width: {width:.2f}%" tabindex="0" '
                        f'data-tip="{clean(tip)}"></span>')
        words.append(f'<span class="{css}-key">{clean(label)} {secs:.2f} s</span>')
    passes = f"{lane.target_passes} target pass" + ("" if lane.target_passes == 1 else "es")
    return (f'<div class="lane-row"><div class="lane-name">{clean(name)}<br><small>{lane.total_s:.2f} s · '
            f'{lane.tokens} tokens · {passes}</small></div><div class="bar">{"".join(segments)}</div>'
            f'<div class="lane-words">{" ".join(words)}</div></div>')     # the space: for copied text


TREE_THEORY_TIP = ("the chain's formula E(a, k) does not describe a token tree (several guesses a depth): the "
                   "box below sets the tree against a chain of its depth instead")


def ledger_html(led, stopped: bool = False, path: str = "", tree: bool = False) -> str:
    """The box; `stopped` labels a race the visitor stopped (its figures cover the part that ran);
    `path`: how the lanes decoded (path_line), when not eagerly; `tree`: a token tree race, whose
    break-even a and theory the chain's formula cannot give (shown as —, the tree box prices it)."""
    verdict = "stopped" if stopped else led.verdict
    glyph, label = VERDICTS.get(verdict, VERDICTS["unmeasured"])
    stop_note = (f'<p class="cause">{clean("Stopped before the end: the figures below cover the part that ran.")}</p>'
                 if stopped else "")
    scale = max(led.spec.total_s, led.plain.total_s)
    # "no a pays" only where this race priced a round (a, c, v trusted) and no a repays it; "not priced"
    # where it could not (no timings, or a pass timed cheaper than a step): never the one for the other.
    even = ("none at this k" if led.no_a_pays else "not priced" if not led.priced else _num(led.break_even_a))
    figures = [("a", _num(led.a), "this race: acceptance rate, accepted / judged drafts"),
               ("c", _num(led.c, ".3f"), "this race: one draft step, in its plain lane's steps"),
               ("v", _num(led.v), "this race: one verify pass with acceptance, in its plain lane's steps"),
               ("break-even a", even, f"speculation pays above this a at this race's c and v and "
                                      f"{ledger_mod.k_label(led.k)}: where E(a, k) = k·c + v"),
               ("theory", "—" if led.theory is None else f"{led.theory:.2f}×",
                "this race: E(a, k) / (k·c + v) with its a, c, v")]
    if tree:
        figures[3:] = [("break-even a", "—", TREE_THEORY_TIP), ("theory", "—", TREE_THEORY_TIP)]
    k_text = f"{led.k:.3g} nodes a round" if tree and led.k is not None else ledger_mod.k_label(led.k)
    figs = "".join(f'<span class="fig" tabindex="0" data-tip="{clean(tip)}"><b>{clean(name)}</b> = {clean(value)}</span>'
                   for name, value, tip in figures)
    return (f'<div class="ledger {verdict_class(verdict)}" id="ledger-box" data-verdict="{clean(verdict)}">'
            f'<div class="verdict-line"><span class="verdict-badge">{glyph} {clean(label)}</span>'
            f'Where each lane\'s time went</div>{stop_note}'
            + (f'<p class="decode-path">{clean(path)}</p>' if path else "") +
            f'<div class="bars">{_bar("speculative", led.spec, scale)}{_bar("plain", led.plain, scale)}</div>'
            f'<div class="figs">{figs}<span class="fig-k">{clean(k_text)}</span></div>{_typical(led)}</div>')


def _typical(led) -> str:
    """The cost model's figures under their own name (across races, a prediction), never as c or v."""
    words = ledger_mod.typical_words(led.typical)
    return f'<p class="typical" id="ledger-typical">{clean(words[0].upper() + words[1:])}.</p>' if words else ""
