"""The form's settings as one object, and the one function that turns them into a run.

`FORM_FIELDS` is the order in which the page lists the form's components (view/form.py); every
handler receives those values and builds a `RunRequest` from them once (by name, never by
position elsewhere); its fields carry SpecConfig's names. `settle` checks what needs no model
(the prompt, the settings, the pair's name) and `load` loads the pair and tokenizes, each once
per click; `prepare` is both. The race, step mode, the lossless check, the rules tab and the
`/generate` API all go through them.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..engine.loop.config import SpecConfig
from ..engine.loop.drafters import DEFAULT_DRAFTER
from ..errors import ConfigError
from ..runtime.pair import ModelPair
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
    drafter: object = DEFAULT_DRAFTER
    k: object = 4
    adaptive_k: object = False
    temperature: object = 0.0
    top_k: object = 0
    top_p: object = 1.0
    max_new_tokens: object = 64
    seed: object = 0
    stop_strings: object = ""      # one per line, as the page's box holds them
    chat: object = None          # None: the preset's default (on for instruct models)
    confidence_stop: object = None   # None: the preset's (SpecConfig.confidence_stop; 0 = off)
    tree: object = ""            # the draft's shape: "" or "chain" = a chain of k; "2,2,1,1" = a token tree
    rule: object = "exact"       # the acceptance rule: "exact" (token by token) or "block" (engine/loop/rules.py)

    @classmethod
    def from_form(cls, *values, **named) -> "RunRequest":
        """Positional values in FORM_FIELDS order (as Gradio passes them), or the same names as keywords."""
        if len(values) > len(FORM_FIELDS):
            raise TypeError(f"the form has {len(FORM_FIELDS)} fields, got {len(values)} values")
        return cls(**dict(zip(FORM_FIELDS, values)), **named)


FORM_FIELDS = tuple(f.name for f in fields(RunRequest))


@dataclass(frozen=True)
class Settled:
    """A request checked without a model: its pair (not loaded yet) and its SpecConfig."""
    preset: Preset
    config: SpecConfig
    prompt: str
    chat: bool

    def capped(self, max_new_tokens: int) -> "Settled":
        """The same run with at most max_new_tokens new tokens (step mode's short runs)."""
        return replace(self, config=replace(self.config, max_new_tokens=min(self.config.max_new_tokens,
                                                                            max_new_tokens)))


@dataclass(frozen=True)
class Prepared:
    """A checked request, ready to decode: the pair is loaded and the prompt tokenized."""
    preset: Preset
    pair: ModelPair
    ids: list[int]
    config: SpecConfig

    @property
    def dtype(self) -> str:
        """The target's weights' dtype as torch names it ("torch.float32"): greedy lanes match only in fp32."""
        return str(next(self.pair.target.parameters()).dtype)


def settle(app: AppState, req: RunRequest, max_new_tokens=None) -> Settled:
    """Check everything that needs no model: the prompt, the settings, the pair's name
    (max_new_tokens, when given, replaces the request's)."""
    prompt = check_prompt(req.prompt, app.max_prompt_chars)
    stop = _pair_stop(app, req) if req.confidence_stop is None else req.confidence_stop
    cfg = make_config(req.drafter, req.k, req.adaptive_k, req.temperature, req.top_k, req.top_p,
                      req.max_new_tokens if max_new_tokens is None else max_new_tokens, req.seed, app.limits,
                      req.stop_strings, stop, req.tree, req.rule)
    # The pair after the settings: a bad setting is refused before a custom pair is registered.
    preset = app.pairs.choose(req.preset, req.custom_target, req.custom_draft)
    chat = preset.chat if req.chat is None else req.chat
    if not isinstance(chat, bool):
        raise ConfigError("chat must be true or false")
    return Settled(preset, cfg, prompt, chat)


def _pair_stop(app: AppState, req: RunRequest) -> float:
    """The confidence stop of the pair the request names, for a request that gives none: a menu preset's
    own (a custom pair's is Preset's default), read without registering anything (`choose` refuses a bad
    pair after the settings, as before)."""
    custom = any(isinstance(v, str) and v.strip() for v in (req.custom_target, req.custom_draft))
    if not custom and isinstance(req.preset, str) and req.preset in app.pairs.presets:
        return app.pairs.presets[req.preset].confidence_stop
    return Preset.confidence_stop


def load(app: AppState, settled: Settled) -> Prepared:
    """Load the settled run's pair (shared cache) and tokenize its prompt (through the chat template if asked)."""
    pair = app.pairs.pair(settled.preset)
    return Prepared(settled.preset, pair, prompt_ids(pair, settled.prompt, app.limits, chat=settled.chat),
                    settled.config)


def prepare(app: AppState, req: RunRequest, max_new_tokens=None) -> Prepared:
    """settle(), then load(): for a caller with nothing to say between the two."""
    return load(app, settle(app, req, max_new_tokens))
