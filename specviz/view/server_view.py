"""A watched server request (remote/watch.py) as page HTML: tokens colored by fate, rounds, figures, the check.

The same classes as the race's panes (green accepted draft, amber the target's correction, blue bonus); the
prefill's first token and tokens without a fate are plain. After a correction a red "×n" says how many drafts
the server rejected in that round: it reports them by number only, so nothing else of them can be drawn.
Every text is escaped (render.clean / render.marked); classes come from the fixed FATE_CLASS table.
"""
from __future__ import annotations

import html

from ..remote.exactness import Verdict
from ..remote.watch import Watch
from .render import clean, marked

FATE_CLASS = {"accepted": "tok tok-accepted", "correction": "tok tok-resampled", "bonus": "tok tok-bonus",
              "first": "tok tok-target", "unexplained": "tok tok-target"}
FATE_WORDS = {"accepted": "a draft the target accepted", "correction": "the target's own token after a rejection",
              "bonus": "the target's bonus token after every draft was accepted",
              "first": "the first token, from the prompt's pass (no draft yet)",
              "unexplained": "no fate: the server's recorded steps do not cover this token"}


def _token(piece: str, fate: str, logprob: float | None, round_no: int | None) -> str:
    lp = f"; target logprob {logprob:.2f}" if logprob is not None else ""
    where = f"round {round_no}: " if round_no else ""
    tip = html.escape(f"{where}{FATE_WORDS[fate]}{lp}", quote=True)
    return f'<span class="{FATE_CLASS[fate]}" data-tip="{tip}" tabindex="0">{marked(piece)}</span>'


def pane(seen: Watch | None, waiting: str = "") -> str:
    """The output pane: plain tokens while streaming, colored by fate once the server's counts arrived."""
    if seen is None:
        return f'<div class="token-pane server-pane"><span class="pane-hint">{clean(waiting)}</span></div>'
    if seen.fates is None or seen.fates.why:
        body = clean("".join(seen.completion.pieces)).replace("\n", "<br>")
    else:
        parts = []
        for token in seen.fates.tokens:
            parts.append(_token(token.piece, token.fate, token.logprob, token.round))
            if token.fate == "correction":
                thrown = seen.fates.rounds[token.round - 1].rejected
                parts.append(f'<span class="tok tok-rejected server-thrown" title="{thrown} drafts rejected '
                             f'(the server does not say which)">×{thrown}</span>')
        body = "".join(parts)
    return f'<div class="token-pane server-pane">{body}</div>'


def figures(seen: Watch) -> str:
    """The request's figures as the server computed them, and its /metrics delta."""
    if not seen.finished:
        return f"<p>{len(seen.completion.pieces)} tokens so far, {seen.seconds:.1f} s</p>"
    spec = seen.spec
    rows = [("tokens", f"{len(seen.completion.pieces)} in {seen.seconds:.2f} s"),
            ("mean acceptance length", f"{spec.get('mean_acceptance_length', 0):.2f} tokens a step (bonus included)"),
            ("draft acceptance rate", f"{spec.get('draft_acceptance_rate', 0):.2f} of {spec.get('num_draft_tokens', 0)}"
                                      f" drafts"),
            ("steps", f"{spec.get('num_spec_steps', 0)} of up to {spec.get('num_spec_tokens', 0)} drafts each")]
    by_pos = seen.acceptance_by_position()
    if by_pos:
        rows.append(("accepted by position (this request)", ", ".join(f"{i + 1}: {x:.2f}" for i, x in enumerate(by_pos))))
    if seen.counters:
        drafts = seen.counters["vllm:spec_decode_num_drafts_total"] or 1
        rows.append(("the server's /metrics over this request",
                     ", ".join(f"{p + 1}: {v / drafts:.2f}" for p, v in seen.counters["per_position"].items())))
    if seen.fates is not None and seen.fates.why:
        rows.append(("fates", f"not shown: {seen.fates.why}"))
    rows.extend(("note", n) for n in seen.notes)
    cells = "".join(f"<tr><th>{clean(k)}</th><td>{clean(v)}</td></tr>" for k, v in rows)
    return f'<table class="server-figures">{cells}</table>'


def verdict_html(verdict: Verdict | None) -> str:
    if verdict is None:
        return ""
    cls = {True: "server-ok", False: "server-bad", None: "server-unknown"}[verdict.lossless]
    return f'<p class="{cls}">{clean(verdict.sentence())}</p>'
