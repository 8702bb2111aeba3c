"""The finished race's status line: the verdict with its headline, the notes that qualify it, the why
under it, and the "Ran:" line, all from the folded view and the ledger (a race that just ran and a
replayed trace, view/replay.py, both end here). HTML only: every piece of text escaped.
"""
from __future__ import annotations

from ..app.machine_load import busy_words
from ..app.run_setup import ran_text, settings_text
from ..engine.analysis.headline import headline
from .ledger_view import VERDICTS, tallies, verdict_class
from .race_view import RaceView
from .render import clean
from .tree_results import tree_why


# On a projector and a phone the headline stands alone on one line (two on a phone) and what qualifies it
# (notes, why, the "Ran:" line) folds under this button (assets/style.css, assets/page.js), so the panes
# keep their place when the race ends; elsewhere the button is not shown and the why reads in full.
WHY_TOGGLE = '<button type="button" class="why-toggle" aria-expanded="false">why?</button>'


def _summary(view: RaceView, led, others: float | None, greedy: bool, dtype: str | None,
             side: list[str] = (), shared: bool = False, tree: tuple[int, ...] | None = None,
             lanes=None, rep=None) -> str:
    """The finished race's status (HTML), styled by the ledger's verdict (a loss is never shown as a
    success): the verdict with the race's headline (engine/analysis/headline.py: greedy, the same text
    in fewer target passes; sampled, each lane's length and stop reason, compared per token), then
    why greedy lanes differ when they do (rounding in bf16/fp16, greedy being exact only in fp32), a
    repetitive text named, and whether other programs took the CPU meanwhile, this server's own work
    beside the race (`side`: app/side_work.py), or another decoding job computing at the same time
    (`shared`: a host allowing more than one at once, app/slots.py). Under it, the ledger's why, or for a
    token tree (`tree`: its shape) the tree's own (view/tree_results.tree_why), which the chain's ledger
    sentence cannot give (from `lanes`, the race's tallies where the caller has them). `rep`: Race 3x's
    Repeated (engine/analysis/repeat.py): then the headline is the median with its range, and its verdict."""
    verdict = rep.verdict if rep is not None else led.verdict
    glyph, label = VERDICTS.get(verdict, VERDICTS["unmeasured"])
    tree_because = tree_why(*(lanes or tallies(view.stats)), len(tree)) if tree else None
    # a tree's own why, then what qualifies the verdict (a wide interval, a busy machine), as the chain's says
    because = " ".join(x for x in (tree_because, led.uncertain) if x) if tree_because else why(led)
    spec, plain = view.dones.get("spec"), view.dones.get("base")
    head = headline(spec, plain, greedy, view.stats.compared()) if spec is not None and plain is not None else None
    text = f"{glyph} {label}: " + (head.line if head else "the race finished.")
    if rep is not None:
        text = f"{glyph} {label}: {rep.headline()} The panes show the first race: " + (head.line if head else "")
    notes = []
    if head and head.same_text is False and greedy and dtype:      # (a replayed version-1 trace has no dtype)
        notes.append(f"The greedy lanes parted: in {dtype.removeprefix('torch.')} the target's pass over k + 1 "
                     f"tokens and its one-token step round differently, so near-ties can flip. In float32 they "
                     f"are identical." if dtype != "torch.float32" else
                     "The greedy lanes differ, which float32 should never show: please report it with the trace.")
    if head and head.repetition:
        notes.append(head.repetition)
    # Other programs, this server's side work or another decoding job beside the race: the why says it
    # once, in the verdict's own words (busy_reason, engine/analysis/verdict.py).
    attrs = "" if others is None else f' data-other-load="{others:.3f}"'
    attrs += f' data-side-work="{clean("; ".join(side))}"' if side else ""
    attrs += ' data-shared="1"' if shared else ""
    if head:
        attrs += f' data-per-token="{int(head.per_token)}"'
        attrs += "" if head.same_text is None else f' data-same-text="{int(head.same_text)}"'
        attrs += ' data-repetitive="1"' if head.repetition else ""
    note = f'<div class="race-note">{clean(" ".join(notes))}</div>' if notes else ""
    short = (f'<div class="headline-short">{clean(f"{glyph} {label}: {rep.headline()}")}</div>' if rep is not None
             else _short(view, head, glyph, label))
    return (f'<div class="status status-done {verdict_class(verdict)}" id="race-summary" '
            f'data-verdict="{clean(verdict)}"{attrs}><div class="headline" id="race-headline">{clean(text)}</div>'
            f'{short}{WHY_TOGGLE}{note}<p class="why" id="race-why" tabindex="0" data-tip="{clean(because)}"><b>Why:</b> '
            f'{clean(because)}</p></div>')


def _short(view: RaceView, head, glyph: str, label: str) -> str:
    """The headline's figure first, for a projected line and a phone's two (assets/style.css): there the
    verdict and the figure alone stand in for the headline until "why?" opens the whole line, so the
    number is never what a line clamp cuts ("... instead of 128: 1.0..."). "" without a headline."""
    if not head:
        return ""
    speedup, over = view.stats.compared()
    if speedup is None:
        return ""
    if head.per_token:
        basis = "per token" if over is None else f"like for like over {over} tokens"
        return f'<div class="headline-short">{clean(f"{glyph} {label}: {speedup:.2f}× the plain rate, {basis}")}</div>'
    same = ", the same text" if head.same_text else ""
    return f'<div class="headline-short">{clean(f"{glyph} {label}: {speedup:.2f}× the speed{same}")}</div>'


def busy_reason(others: float | None, side: list[str], shared: bool) -> str:
    """"" for a quiet machine, else the few words the verdict gives for not trusting one race (the CLI's
    words too: app/machine_load.busy_words)."""
    return busy_words(others, side, shared)


def why(led) -> str:
    """The ledger's cause as the sentence under the verdict (its plain sentence first, the formula's under
    it), without a verdict word it might open with ("Faster: ..." under "▲ Faster: ..." said it twice)."""
    lead = f"{led.verdict.capitalize()}: "
    return led.cause[len(lead):] if led.cause.startswith(lead) else led.cause


def ran_line(label: str, cfg) -> str:
    """Under the verdict: the pair and settings this race ran with (app/run_setup.py; the menu may show
    another pair by the time it ends, when it was changed mid-race)."""
    return f'<div class="run-setup" id="race-ran">Ran: {clean(ran_text(label, settings_text(cfg)))}</div>'
