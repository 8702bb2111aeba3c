"""Filling the settings form from a share link (when the page opens) or a loaded trace.

Both go through the link's own checks (view/share.py `read_link`): a trace's settings are read as the
link that would have written them, so a value this server would refuse is named in one line under Run
and the field left as it was. `opened` answers the page's load; `from_trace` the trace's replay, so
Run after loading a trace races the same settings and prompt again. Each returns one update per name
in FILLED (gr.skip() where nothing changes), every piece of text escaped where it becomes HTML.
"""
from __future__ import annotations

import gradio as gr

from ..app.form_table import BY_NAME, CHAIN, span
from ..app.state import AppState
from .render import clean
from .share import VALUES, Opening, read_link

# What a fill may set, by name: the form's fields a link carries (RunRequest's names, from the settings
# table), the example prompts, the note under Run, the link's class setup (gr.State) and the share
# options' two boxes.
FILLED = ("preset", "prompt", *VALUES, "examples", "note", "link", "lock", "use_examples")
# The fields a fill sets as named; k, chat and the confidence stop default to the pair's own instead.
PLAIN = tuple(name for name in VALUES if not BY_NAME[name].on_pair)


def opened(app: AppState, params) -> dict:
    """Page load: the share link's values in the form (each checked; a refused one named in a line,
    its field left at the default), its class setup locking the pair and k, its prompts as examples.
    A field the link does not name is left as it is (a visitor may already be typing)."""
    got: Opening = read_link(app, params)
    out = {name: gr.skip() for name in FILLED}
    preset = app.pairs.presets.get(got.pair) if got.pair else app.pairs.default_preset()
    if preset is None:
        return out
    repaired = got.pair is not None and got.pair != app.pairs.default_preset().key    # the pair's own settings follow
    examples = got.prompts or preset.examples
    if got.prompt is not None:
        out["prompt"] = got.prompt
    elif (got.prompts or repaired) and examples:
        out["prompt"] = examples[0]
    lines = []
    if got.pinned:
        lines.append(f'<div class="status link-class">Class setup: the pair ({clean(preset.label)}) and '
                     f'k = {got.k} are set by this link, the same on every laptop.</div>')
    lines += [f'<div class="status status-error">Link: {clean(p)}; left at its default.</div>' for p in got.problems]
    if got.pair or got.pinned:
        out["preset"] = gr.update(value=preset.key, interactive=not got.pinned)
    k = got.k if got.k is not None else (preset.k if repaired else None)
    if k is not None or got.pinned:
        out["k"] = gr.update(value=k, interactive=not got.pinned)
    if got.prompts or repaired:
        out["examples"] = gr.Dataset(samples=[[e] for e in examples])
    _fields(app, out, got, preset, repaired)
    out.update(note="".join(lines), link={"pinned": got.pinned, "prompts": list(got.prompts)},
               lock=got.pinned, use_examples=bool(got.prompts))
    return out


def from_trace(app: AppState, recorded, link=None) -> dict:
    """A replayed trace's settings and prompt in the form, so Run races them again. A class link's pinned
    pair and k stay; a pair this server does not have is named and the form's own kept."""
    cfg, pinned = recorded.config, bool((link or {}).get("pinned"))
    params = {"prompt": recorded.prompt, **{name: _as_linked(getattr(cfg, name)) for name in VALUES
                                             if hasattr(cfg, name)}}
    if recorded.key:
        params["pair"] = recorded.key
    if recorded.chat is not None:
        params["chat"] = "1" if recorded.chat else "0"
    if pinned:
        params.pop("pair", None), params.pop("k", None)
    got: Opening = read_link(app, params)
    out = {name: gr.skip() for name in FILLED}
    preset = app.pairs.presets.get(got.pair) if got.pair else None
    if got.prompt is not None:
        out["prompt"] = got.prompt
    if preset is not None:
        out["preset"] = preset.key
        if not (link or {}).get("prompts"):
            out["examples"] = gr.Dataset(samples=[[e] for e in preset.examples])
    if got.k is not None:
        out["k"] = got.k
    _fields(app, out, got, preset, False)
    kept = " (the pair and k stay as the class link set them)" if pinned else ""
    lines = [f'<div class="status link-class" id="trace-form">The form now holds the trace\'s settings and prompt'
             f'{kept}: Run races it again.</div>']
    lines += [f'<div class="status status-error">Trace: {clean(p)}; left as it was.</div>' for p in got.problems]
    out["note"] = "".join(lines)
    return out


def _as_linked(value):
    """A trace's SpecConfig value as a link writes it: a chain or a tree's widths as the draft shape box's
    text, stop strings one per line, a switch as 1 or 0."""
    if value is None:
        return CHAIN
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(map(str, value)) if all(isinstance(v, int) for v in value) else "\n".join(value)
    return value


def _fields(app: AppState, out: dict, got: Opening, preset, repaired: bool) -> None:
    """The fields every fill sets alike: each PLAIN one the link or trace names (a slider stretched to show
    a value the app accepts beyond its span), then chat and the confidence stop, whose default is the
    pair's own (taken when the pair changed and they are unnamed)."""
    for name in PLAIN:
        value = getattr(got, name)
        if value is not None:
            out[name] = _shown(app, name, value)
    if got.chat is not None or (repaired and preset is not None):
        chat = got.chat if got.chat is not None else preset.chat
        out["chat"] = gr.Checkbox(value=chat, interactive=preset.chat) if preset is not None else chat
    if got.confidence_stop is not None:
        out["confidence_stop"] = got.confidence_stop
    elif repaired and preset is not None:
        out["confidence_stop"] = preset.confidence_stop


def _shown(app: AppState, name: str, value):
    """A value for its widget: as it is, or, for a slider whose span does not reach it (a link's
    temperature 3 where the slider stops at 2), an update that stretches the slider to it."""
    spanned = span(BY_NAME[name], app.limits)
    if spanned is None or spanned[0] <= value <= spanned[1]:
        return value
    return gr.update(value=value, minimum=min(spanned[0], value), maximum=max(spanned[1], value))
