"""A downloaded race trace read back from its text: checked before anything is drawn from it.

`read` takes the file's text as the browser sent it and returns the race it records (settings,
pair, prompt, events), or raises TraceRefused with one line for the visitor: too large, not JSON,
not a specviz trace, a version this code does not read, damaged settings, a damaged event, or a
lane's damaged record of how it ran (app/run_records.py). The events are rebuilt with the engine's
own `from_dict`, so each checks its invariants as it does when the engine makes it, and then checked
as one coherent race (`_coherent`): each lane ends with one Done; the plain lane's tokens in order;
the speculative lane's rounds in order, each with no more events than it drafted and three; neither
lane past the settings' max_new_tokens. So a real trace's events repeated, or padded with events, is
refused, and a trace's replay costs no more than the race it records. Nothing here renders:
view/replay.py draws the race.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..app.run_records import DecodePath, choice_rows
from ..app.visitor_text import one_line
from ..engine.loop.config import TREE_NODES_MAX, SpecConfig
from ..engine.loop.events import Event, from_dict

# The largest trace the app can write, with room. The largest max_new_tokens any hosting tier allows is
# 512 (spaces.yaml's gpu tier); at 512 tokens on the bundled pair the largest measured was 1.15 MB (k = 12,
# T = 1, an English prompt the code pair's draft rarely guesses: many rounds, each carrying the running
# text), 0.95-1.0 MB at T = 1.5 or k = 1, 0.58-0.95 MB on a code prompt. So 2.5 MB, about twice that.
MAX_BYTES = 2_500_000
TOKEN_EVENTS = ("drafted", "accepted", "rejected", "resampled", "bonus")
VERSIONS = (1, 2)           # 2 added the pair's label and the target's dtype
NOT_A_TRACE = "This file is not a specviz trace (a race's “Download trace (JSON)” file)."


class TraceRefused(ValueError):
    """A file that cannot be replayed; its message is the one line the visitor reads."""


@dataclass(frozen=True)
class Recorded:
    prompt: str
    label: str              # the pair as the page names it
    dtype: str | None       # the target's dtype (version 2 on), read by the status' greedy note
    config: SpecConfig
    events: list[Event]
    cost: dict | None = None   # the cost model's samples the race's ledger read, and a busy machine (checked)
    key: str | None = None     # the pair's preset key (the form's pair menu), where the trace names one
    chat: bool | None = None   # whether the prompt went through the chat template (None: not recorded)


def read(text) -> Recorded:
    if not isinstance(text, str) or not text.strip():
        raise TraceRefused("Pick a specviz-trace.json file to replay.")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise TraceRefused(f"This file is larger than any race's trace ({MAX_BYTES / 1e6:g} MB at most).")
    try:
        data = json.loads(text)
    except ValueError:
        raise TraceRefused(NOT_A_TRACE + " It is not JSON.") from None
    if not isinstance(data, dict) or "specviz_trace" not in data:
        raise TraceRefused(NOT_A_TRACE)
    version = data["specviz_trace"]
    if isinstance(version, bool) or version not in VERSIONS:
        raise TraceRefused(f"This trace's version ({one_line(version)}) is not one this specviz reads "
                           f"({' or '.join(map(str, VERSIONS))}).")
    config = _config(data.get("config"))
    events = _events(data.get("events"))
    _coherent(config, events)
    _run_records(events)
    prompt = data.get("prompt")
    return Recorded(prompt=prompt if isinstance(prompt, str) else "", label=_label(data), dtype=_dtype(data),
                    config=config, events=events, cost=_cost(data.get("cost")),
                    key=data["preset"][:200] if isinstance(data.get("preset"), str) else None,
                    chat=data["chat"] if isinstance(data.get("chat"), bool) else None)


def _cost(raw) -> dict | None:
    """The trace's cost record (handlers.cost_record), or None where it is absent or not well formed: a
    replay then prices from the race's own figures, as an older trace's does."""
    if not isinstance(raw, dict):
        return None
    busy = raw.get("busy", "")
    busy = busy[:200] if isinstance(busy, str) else ""
    k = raw.get("k")
    samples = [raw.get("c"), raw.get("v")]
    if not (isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 64 and all(
            isinstance(xs, list) and len(xs) <= 10_000 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                              and 0 <= x < 1e6 for x in xs) for xs in samples)):
        return {"k": None, "c": [], "v": [], "busy": busy}
    return {"k": k, "c": [float(x) for x in samples[0]], "v": [float(x) for x in samples[1]], "busy": busy}


def _config(raw) -> SpecConfig:
    if not isinstance(raw, dict):
        raise TraceRefused("This trace has no settings to replay.")
    try:
        return SpecConfig(**raw)
    except Exception as err:         # noqa: BLE001 - unknown keys, values of the wrong kind or range
        raise TraceRefused(f"This trace's settings cannot be read: {one_line(err)}") from None


def _events(raw) -> list[Event]:
    if not isinstance(raw, list) or not raw:
        raise TraceRefused("This trace holds no events to replay.")
    events = []
    for i, record in enumerate(raw):
        try:
            events.append(from_dict(dict(record)))
        except Exception:             # noqa: BLE001 - a missing field, a wrong kind, a broken invariant
            raise TraceRefused(f"This trace's event {i + 1} of {len(raw)} is damaged: it cannot be replayed.") from None
    if {e.lane for e in events} != {"spec", "base"}:
        raise TraceRefused("This trace does not hold both lanes of a race.")
    return events


def _coherent(config: SpecConfig, events: list[Event]) -> None:
    """Refuse events that do not make up one race under `config` (module docstring)."""
    limit = config.max_new_tokens
    for lane in ("spec", "base"):
        own = [e for e in events if e.lane == lane]
        if own[-1].kind != "done" or sum(e.kind == "done" for e in own) != 1:
            raise TraceRefused("This trace's race does not end once in each lane: it cannot be replayed.")
    base = [e for e in events if e.lane == "base" and e.kind == "target_token"]
    if [e.index for e in base] != list(range(len(base))) or len(base) > limit:
        raise TraceRefused(f"This trace's plain lane is not {limit} tokens or fewer, in order: it cannot be replayed.")
    ended, open_round, in_round = None, None, 0
    for e in (e for e in events if e.lane == "spec" and e.kind != "done"):
        if e.kind in TOKEN_EVENTS:
            if (ended is not None and e.round <= ended) or (open_round is not None and e.round != open_round):
                raise TraceRefused("This trace's rounds are out of order: it cannot be replayed.")
            open_round, in_round = e.round, in_round + 1
        elif e.kind == "round_end":
            if (ended is not None and e.round <= ended) or (open_round is not None and e.round != open_round) \
                    or in_round > e.drafted + 3 or e.total_tokens > limit:
                raise TraceRefused("This trace's rounds are out of order or over its max_new_tokens: "
                                   "it cannot be replayed.")
            ended, open_round, in_round = e.round, None, 0
        else:
            raise TraceRefused("This trace's speculative lane holds plain tokens: it cannot be replayed.")
    if in_round > TREE_NODES_MAX + 3:
        raise TraceRefused("This trace's last round holds more events than a round can: it cannot be replayed.")


def _run_records(events: list[Event]) -> None:
    """Refuse a lane whose record of how it ran does not check (app/run_records.py): a decode path no
    engine writes, a tree row kept more often than judged."""
    for done in (e for e in events if e.kind == "done"):
        try:
            DecodePath.parse(getattr(done.stats, "decode_path", None))
            choice_rows(getattr(done.stats, "by_choice", None))
        except ValueError as err:
            raise TraceRefused(f"This trace's record of how its {done.lane} lane ran is damaged "
                               f"({one_line(err)}): it cannot be replayed.") from None


def _label(data: dict) -> str:
    if isinstance(data.get("pair"), str) and data["pair"]:
        return data["pair"]
    models = data.get("models")
    if isinstance(models, dict) and all(isinstance(models.get(k), str) for k in ("target", "draft")):
        return f"{models['target']} with {models['draft']}"
    return str(data.get("preset") or "a model pair")


def _dtype(data: dict) -> str | None:
    dtype = data.get("dtype")
    return dtype if isinstance(dtype, str) and dtype.startswith("torch.") else None
