"""One race's events folded into what the race tab shows: two panes, two meters, a stats strip.

Built from events only (via specviz.engine.analysis.stats), so a saved trace redraws the same view.
Pane HTML only grows by appended fragments while streaming.
"""
from __future__ import annotations

from ..engine.metrics import measures, theory
from ..engine.loop.events import to_dict
from ..engine.analysis.ledger import k_label
from ..engine.analysis.stats import RunStats
from ..engine.analysis.token_kinds import KindTally
from .ledger_view import tallies
from .render import clean, fragment
from .tree_view import round_note
from .timeline import Timeline

STOP_WORDS = {"eos": "end of text", "max_tokens": "max tokens", "stop_string": "stop string",
              "cancelled": "stopped", "length_limit": "model length limit"}


class RaceView:
    def __init__(self, k: int):
        self.stats = RunStats(k)
        self.parts: dict[str, list[str]] = {"spec": [], "base": []}
        self.trace: list[dict] = []
        self.kinds = KindTally()                      # ... and per kind of drafted token (engine/analysis/token_kinds.py)
        self.dones: dict = {}                         # lane -> its Done event (the headline reads both)
        self.tree_round: list = []                    # a token tree round of the spec lane: Drafted, then its verdicts
        self.tree = False                             # a token tree race (its Drafted events carry parents)
        self.timeline = Timeline()                    # both lanes on one clock (view/timeline.py)
        self.thrown = 0                               # drafts thrown away so far in the spec lane's round

    def add(self, event) -> None:
        self.trace.append(to_dict(event))
        self.stats.add(event)
        if event.lane == "spec":
            self.kinds.add(event)
        if event.kind == "done":
            self.dones[event.lane] = event
        piece = fragment(event, self._thrown(event))
        if piece:
            self.parts[event.lane].append(piece)
        if event.lane == "spec":
            self._tree_note(event)
        self.timeline.add(event)

    def _thrown(self, event) -> int:
        """Drafts thrown away in the speculative lane's current round (each rejected draft and those after
        it, or under it in a tree), given to the round's correction, where the Text view counts them."""
        if event.lane != "spec":
            return 0
        if event.kind == "drafted":
            self.thrown = 0
        elif event.kind == "rejected":
            self.thrown += 1 + int(event.discarded)
        elif event.kind == "resampled":
            return self.thrown
        return 0

    def stopped(self) -> None:
        """Stop was clicked: a lane that had not finished is marked stopped (its meter never says
        "running" beside "Stopped.")."""
        for lane in ("spec", "base"):
            self.stats.stop_reasons.setdefault(lane, "cancelled")

    def _tree_note(self, event) -> None:
        """A tree round's compact note (tree_view.round_note), appended after its tokens at its RoundEnd."""
        if event.kind == "drafted":
            self.tree_round = [event] if event.parents is not None else []
            self.tree = self.tree or event.parents is not None
        elif self.tree_round and event.kind == "round_end":
            self.parts["spec"].append(round_note(self.tree_round[0], self.tree_round[1:]))
            self.tree_round = []
        elif self.tree_round:
            self.tree_round.append(event)

    def pane(self, lane: str) -> str:
        return "".join(self.parts[lane])

    def meter(self, lane: str) -> str:
        s = self.stats
        # The lane's clock and counts as the headline and the ledger's bars give them (its Done.stats once it
        # ended, else the fold so far: ledger_view.tallies), not the time of its last token: the meter's
        # seconds and tokens/s then agree with each other and with every other line about the lane.
        tally = tallies(s)[0 if lane == "spec" else 1]
        t, n = tally.elapsed_s, tally.tokens
        rate = measures.rate(n, t)
        name = "Speculative decoding" if lane == "spec" else "Plain target decoding"
        reason = s.stop_reasons.get(lane)
        if reason is None:
            state = '<span class="running">running</span>'
        elif reason == "cancelled":     # a stopped lane is not a success: no check mark, no green
            state = '<span class="finished lane-stopped">■ stopped</span>'
        else:
            state = f'<span class="finished">✓ {STOP_WORDS.get(reason, "done")}</span>'
        extra = ""
        if lane == "spec" and tally.rounds:
            extra = f"<span>{tally.rounds} rounds</span>"
        # Two rows in both lanes (name and state, then the figures): wrapped wherever each lane's text
        # ran out, the two meters differed by a line and the panes below them started out of level.
        return (f'<div class="meter meter-{lane}"><div class="meter-head"><b>{name}</b>{state}</div>'
                f'<div class="meter-figures"><span class="clock">{t:.2f} s</span><span>{n} tokens</span>'
                f"<span>{'—' if rate is None else f'{rate:.1f}'} tok/s</span>{extra}</div></div>")

    def strip(self, led=None) -> str:
        """The stats strip: each figure with its counts, and a one-line definition (data-tip, shown on
        hover, tap and focus) that names it as docs/metrics.md does. While the race streams the figures are
        the fold's so far; once it ended, `led` (its ledger, engine/analysis/ledger.py) gives a, tau, E, c,
        v, the theory, the passes and the measured speedup, and the counts come from the lanes it was built
        from, so the strip and every other line print the one record."""
        s, t = self.stats, self.stats.tallies["spec"]
        th, c, v = s.theory(), s.cost_ratio(), s.verify_ratio()
        speed = s.measured_speedup()
        over = s.compared()[1]           # the tokens each lane was timed to, where their lengths differ
        passes = (len(s.rounds), s.tokens["base"][-1])
        if led is not None:
            # The ledger's lanes (the engine's Done.stats, where the fold has them: ledger_view.tallies), not
            # the page's fold: a trace whose stats and events disagree showed two a's on one screen.
            t = tallies(s)[0]
            th = ({} if led.a is None or not led.k else
                  {"k": led.k, "tokens_per_round": theory.expected_tokens_per_round(led.a, led.k)})
            th.update({"speedup": led.theory} if led.theory is not None else {})
            c, v, speed = led.c, led.v, led.speedup
            passes = (led.spec.target_passes, led.plain.target_passes)
        a, a_d, tau = measures.acceptance_rate(t), measures.draft_acceptance_rate(t), measures.mean_acceptance_length(t)
        if self.tree:        # the chain's formula E(a, k) does not describe a tree: no theory figures
            th = {}
        cond = measures.conditional_acceptance(s.positions.judged, s.positions.accepted)
        by_pos = " ".join(f"{i + 1}:{x:.2f}" for i, x in list(cond.items())[:8]) or "—"
        fmt = lambda x: "—" if x is None else f"{x:.2f}"      # noqa: E731
        cells = [
            ("acceptance rate", fmt(a), f"a = {t.accepted} / {t.accepted + t.rejected} judged",
             "a = accepted / judged drafts: of the drafts the target checked, the share it kept (drafts after a "
             "rejection are never judged). docs/metrics.md: acceptance rate a."),
            ("draft acceptance", fmt(a_d), f"a_d = {t.accepted} / {t.drafted} drafted",
             "a_d = accepted / drafted: every draft counts, so those discarded after a rejection count against it "
             "(vLLM's draft acceptance rate). docs/metrics.md: draft acceptance a_d."),
            ("tokens per pass", fmt(tau), f"tau = {t.tokens} / {t.rounds} passes; theory E = "
             + (f"{th['tokens_per_round']:.2f}" if "tokens_per_round" in th else "—"),
             "tau = tokens written / target passes, between 1 and k + 1 (Spec-Bench's mean accepted tokens, "
             "vLLM's mean acceptance length); theory E = (1 - a^(k+1)) / (1 - a), with k the drafts a round "
             "made (fewer than the setting where rounds were cut short). docs/metrics.md: mean acceptance length tau."),
            ("accepted by position", by_pos, "a_i = accepted_i / judged_i",
             "a_i = accepted at draft position i / judged at i: the chance the i-th draft of a round is kept, "
             "given all before it were (vLLM's per-position rate is unconditional). docs/metrics.md: "
             "conditional acceptance a_i."),
            ("target passes", f"{passes[0]} vs {passes[1]}", "speculative vs plain",
             "Target forward passes: one per round in the speculative lane, one per token in the plain lane."),
            ("measured speedup", "—" if speed is None else f"{speed:.2f}×",
             "tokens/s, each lane on its own clock" if over is None else
             f"like for like: each lane's time to its first {over} tokens",
             "speedup = speculative tokens/s over plain tokens/s, each lane timed on its own clock. "
             "docs/metrics.md: speedup."),
            ("theory speedup", f"{th['speedup']:.2f}×" if "speedup" in th else "—",
             f"E / (k·c + v): {k_label(th['k'])}, c = {c:.3f}, v = {v:.2f}" if c and v and th else
             "not for a tree: see the tree box" if self.tree else "from a, c and v",
             "S = E / (k·c + v): c = one draft step and v = one verify pass, both in this race's plain steps; "
             "none where this race timed a pass cheaper than a step. docs/metrics.md: theory speedup."),
        ]
        # The measured speedup also as data: id "speedup", data-value = the float itself (scripts, tests),
        # unrounded, so it rounds to what the strip and the status show (0.955012 written 0.9550 read 0.95,
        # beside a 0.96 on screen). It changes while the race runs; data-final="1" marks the race's own figure,
        # once both lanes are done (never on a stopped race's).
        final = (' data-final="1"' if {"spec", "base"} <= s.done.keys()
                 and "cancelled" not in s.stop_reasons.values() else "")       # a stopped race has none
        ids = {"measured speedup": f' id="speedup" data-value="{"" if speed is None else repr(float(speed))}"{final}'}
        return '<div class="strip">' + "".join(
            f'<div class="cell" tabindex="0" data-tip="{clean(label + ": " + tip)}">'
            f'<div class="label">{clean(label)}</div>'
            f'<div class="value{" value-list" if label == "accepted by position" else ""}"{ids.get(label, "")}>'
            f'{clean(value)}</div>'
            f'<div class="note">{clean(note)}</div></div>' for label, value, note, tip in cells) + "</div>"
