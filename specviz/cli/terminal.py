"""Events -> ANSI-colored terminal text, for `python -m specviz run`.

Colors follow the app's legend and never rely on hue alone: accepted drafts are green,
rejected drafts red and struck through, the target's correction yellow, the bonus token
cyan and underlined. Control characters in model text are shown escaped, so a model
cannot move the cursor or recolor the terminal.
"""
from __future__ import annotations

from ..engine.loop.events import Event
from ..engine.analysis.explain import sentence
from ..engine.metrics.measures import LaneStats

RESET = "\x1b[0m"
STYLES = {
    "accepted": "\x1b[32m",
    "rejected": "\x1b[31;9m",
    "resampled": "\x1b[30;43m",
    "bonus": "\x1b[36;4m",
    "target_token": "",
}


def safe(text: str) -> str:
    """Model text with terminal control characters (except newline and tab) made visible."""
    return "".join(c if c in "\n\t" or (c.isprintable() and c != "\x1b") else repr(c)[1:-1] for c in text)


def render(event: Event, color: bool = True) -> str:
    """The terminal text one event adds ("" for events that add none)."""
    kind = event.kind
    if kind not in STYLES or (kind == "rejected" and not color):
        return ""   # a rejected draft is not output: shown struck through in color mode only
    text = safe(event.piece)
    if not color or not STYLES[kind] or not text:
        return text
    return f"{STYLES[kind]}{text}{RESET}"


def explanation(event: Event) -> str:
    """One line on why a verdict happened (engine/analysis/explain.py's sentence, as the page's step mode
    shows it), "" for events that are not verdicts."""
    line = sentence(event, quote=lambda piece: repr(safe(piece)))
    return f"  round {event.round}: {line}\n" if line else ""


def legend(color: bool = True) -> str:
    if not color:
        return ""
    parts = [f"{STYLES[k]}{k}{RESET}" for k in ("accepted", "rejected", "resampled", "bonus")]
    return "legend: " + " ".join(parts)


def summary_line(stats: LaneStats, label: str) -> str:
    rate, per_round = stats.acceptance_rate, stats.tokens_per_round
    bits = [f"{label}: {stats.tally.tokens} tokens in {stats.tally.elapsed_s:.2f}s",
            f"{stats.tokens_per_s:.1f} tok/s" if stats.tokens_per_s else "",
            f"acceptance {rate:.2f}" if rate is not None else "",
            # Leviathan's E over the rounds that drafted all k (the ledger's tau counts every pass, the
            # rounds cut short by the token budget or a stop too): the two differ by those rounds.
            f"{per_round:.2f} tokens per full round (all k drafted)" if per_round and rate is not None else "",
            f"{stats.target_forwards} target passes",
            f"draft: {stats.draft_path}" if stats.draft_path not in ("", "eager") else ""]
    return ", ".join(b for b in bits if b)

