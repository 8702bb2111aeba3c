"""The form's settings as one object, and the one function that turns them into a run.

`FORM_FIELDS` is the order in which ui.py lists the form's components; every handler
receives those values and builds a `RunRequest` from them once (by name, never by
position elsewhere). `prepare` is the only place that checks the prompt, builds the
SpecConfig, picks and loads the pair and tokenizes: the race, step mode, the lossless check
and the `/generate` API all go through it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..engine.loop.config import SpecConfig
from ..engine.runtime.pair import ModelPair
from ..models.presets import Preset
from .state import AppState
from .settings import check_prompt, make_config, prompt_ids


@dataclass(frozen=True)
class RunRequest:
    """What a visitor asked for, as the page (or an API client) sent it: values are checked by `prepare`."""
    prompt: object = ""
    preset: object = None
    custom_target: object = ""
    custom_draft: object = ""
    drafter: object = "model"
    k: object = 4
    adaptive: object = False
    temperature: object = 0.0
    top_k: object = 0
    top_p: object = 1.0
    max_new: object = 64
    seed: object = 0
    stops: object = ""
    chat: object = None          # None: the preset's default (on for instruct models)
    confidence_stop: object = None   # None: the preset's (SpecConfig.confidence_stop; 0 = off)

    @classmethod
    def from_form(cls, *values, **named) -> "RunRequest":
        """Positional values in FORM_FIELDS order (as Gradio passes them), or the same names as keywords."""
        if len(values) > len(FORM_FIELDS):
            raise TypeError(f"the form has {len(FORM_FIELDS)} fields, got {len(values)} values")
        return cls(**dict(zip(FORM_FIELDS, values)), **named)


FORM_FIELDS = tuple(f.name for f in fields(RunRequest))


@dataclass(frozen=True)
class Prepared:
    """A checked request, ready to decode: the pair is loaded and the prompt tokenized."""
    preset: Preset
    pair: ModelPair
    ids: list[int]
    config: SpecConfig


def settle(app: AppState, req: RunRequest, max_new=None) -> tuple[Preset, SpecConfig]:
    """Check everything that needs no model: the prompt, the settings, the pair's name."""
    check_prompt(req.prompt, app.max_prompt_chars)
    cfg = make_config(req.drafter, req.k, req.adaptive, req.temperature, req.top_k, req.top_p,
                      req.max_new if max_new is None else max_new, req.seed, app.limits, req.stops,
                      0.0 if req.confidence_stop is None else req.confidence_stop)
    # The pair after the settings: a bad setting is refused before a custom pair is registered.
    preset = app.choose(req.preset, req.custom_target, req.custom_draft)
    if req.confidence_stop is None:                 # the pair's own default
        cfg = replace(cfg, confidence_stop=preset.confidence_stop)
    return preset, cfg


def prepare(app: AppState, req: RunRequest, max_new=None) -> Prepared:
    """settle(), then load the pair (shared cache) and tokenize (through the chat template if asked)."""
    preset, cfg = settle(app, req, max_new)
    pair = app.pair(preset)
    chat = preset.chat if req.chat is None else req.chat
    if not isinstance(chat, bool):
        from ..errors import ConfigError
        raise ConfigError("chat must be true or false")
    return Prepared(preset, pair, prompt_ids(pair, req.prompt, app.limits, chat=chat), cfg)
