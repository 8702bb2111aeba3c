"""One race's events folded into what the race tab shows: two panes, two meters, a stats strip.

Built from events only (via specviz.engine.stats), so a saved trace redraws the same view.
Pane HTML only grows by appended fragments while streaming.
"""
from __future__ import annotations

from ..engine.events import to_dict
from ..engine.stats import RunStats
from .render import clean, fragment

STOP_WORDS = {"eos": "end of text", "max_tokens": "max tokens", "stop_string": "stop string",
              "cancelled": "stopped", "length_limit": "model length limit"}


class RaceView:
    def __init__(self, k: int):
        self.stats = RunStats(k)
        self.parts: dict[str, list[str]] = {"spec": [], "base": []}
        self.trace: list[dict] = []

    def add(self, event) -> None:
        self.trace.append(to_dict(event))
        self.stats.add(event)
        piece = fragment(event)
        if piece:
            self.parts[event.lane].append(piece)

    def pane(self, lane: str) -> str:
        return "".join(self.parts[lane])

    def meter(self, lane: str) -> str:
        s = self.stats
        t, n = s.times[lane][-1], s.tokens[lane][-1]
        rate = s.lane_rate(lane)
        name = "Speculative decoding" if lane == "spec" else "Plain target decoding"
        state = f'<span class="finished">✓ {STOP_WORDS.get(s.stop_reasons[lane], "done")}</span>' \
            if lane in s.stop_reasons else '<span class="running">running</span>'
        extra = ""
        if lane == "spec" and s.rounds:
            extra = f"<span>{len(s.rounds)} rounds</span>"
        return (f'<div class="meter meter-{lane}"><b>{name}</b>{state}<span class="clock">{t:.2f} s</span>'
                f"<span>{n} tokens</span><span>{'—' if rate is None else f'{rate:.1f}'} tok/s</span>{extra}</div>")

    def strip(self) -> str:
        s = self.stats
        a, per_round, th, c, v = s.acceptance_rate, s.tokens_per_round, s.theory(), s.cost_ratio(), s.verify_ratio()
        speed = s.measured_speedup()
        passes_spec = len(s.rounds)
        passes_base = s.tokens["base"][-1]
        cells = [
            ("acceptance rate", "—" if a is None else f"{a:.2f}", "accepted / verified drafts"),
            ("tokens per round", "—" if per_round is None else f"{per_round:.2f}",
             "theory " + (f"{th['tokens_per_round']:.2f}" if "tokens_per_round" in th else "—") + " = (1−aᵏ⁺¹)/(1−a)"),
            ("target passes", f"{passes_spec} vs {passes_base}", "speculative vs plain"),
            ("measured speedup", "—" if speed is None else f"{speed:.2f}×", "tokens/s, each lane on its own clock"),
            ("theory speedup", f"{th['speedup']:.2f}×" if "speedup" in th else "—",
             f"E / (k·c + v): c = {c:.3f} per draft, v = {v:.2f} per verify pass" if c and v
             else "from a, cost ratio c and verify ratio v"),
        ]
        # The measured speedup also as data: id "speedup", data-value = the number (scripts, tests).
        ids = {"measured speedup": f' id="speedup" data-value="{"" if speed is None else f"{speed:.4f}"}"'}
        return '<div class="strip">' + "".join(
            f'<div class="cell"><div class="label">{clean(label)}</div>'
            f'<div class="value"{ids.get(label, "")}>{clean(value)}</div>'
            f'<div class="note">{clean(note)}</div></div>' for label, value, note in cells) + "</div>"
