"""The share link: a race's settings in the page's address, read when the page opens.

`?pair=KEY&prompt=TEXT&k=N&temperature=T&seed=S` opens the page with that pair (its key, not its label),
prompt, k, temperature and seed in the form; every other field of the form travels only where it differs
from its default (`form_defaults`), under SpecConfig's name: `tree=2,2,1,1` (left out: a chain),
`drafter`, `adaptive_k`, `top_k`, `top_p`, `max_new_tokens`, `stop_strings` (one per line), `chat` and
`confidence_stop` (their defaults are the pair's own). `&class=1` pins the pair and k for everyone who
opens the link (the pair menu and k slider are locked, the measured-k suggestion hidden), and each
`&prompts=TEXT` (repeatable) replaces the pair's example prompts. `read_link` checks every value with
the app's own checks (app/settings.py): a bad one is left at its default and named in one line.
`link_query` writes the same query for the current form (the page's "copy link" control).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from ..app.settings import CHAIN, MAX_SEED, as_float, as_int, check_prompt, draft_shape, stop_strings
from ..app.state import AppState
from ..engine.loop.config import CONFIDENCE_STOP_MAX
from ..engine.loop.drafters import DEFAULT_DRAFTER, DRAFTERS
from ..errors import SpecvizError

MAX_PROMPTS = 12              # example prompts a class link may set
TEMPERATURE_MAX = 2.0         # the form's temperature slider's range
TOP_K_MAX = 200               # the form's top-k slider's range (0 = off)
TOP_P_MIN = 0.05              # the form's top-p slider's lowest value (1 = off)
MAX_NEW_DEFAULT = 128         # the form's max new tokens, where the host allows that many
ALWAYS = ("preset", "prompt", "k", "temperature", "seed")     # in every link, whatever their value
# The other fields, each written only where it differs from its default, under these names.
OPTIONAL = ("tree", "drafter", "adaptive_k", "top_k", "top_p", "max_new_tokens", "stop_strings", "chat",
            "confidence_stop")
YES, NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def form_defaults(app: AppState, preset) -> dict:
    """The form's value of each OPTIONAL field when a page opens on `preset` (the form starts from these)."""
    return {"tree": CHAIN, "drafter": DEFAULT_DRAFTER, "adaptive_k": False, "top_k": 0, "top_p": 1.0,
            "max_new_tokens": min(MAX_NEW_DEFAULT, app.limits.max_new_tokens), "stop_strings": "",
            "chat": bool(getattr(preset, "chat", False)), "confidence_stop": getattr(preset, "confidence_stop", 0.0)}


@dataclass
class Opening:
    """What a link asks the form to open with: None leaves a field at its default."""
    pair: str | None = None
    prompt: str | None = None
    k: int | None = None
    temperature: float | None = None
    seed: int | None = None
    tree: str | None = None       # the draft shape box's text ("2,2,1,1"; "chain")
    drafter: str | None = None
    adaptive_k: bool | None = None
    top_k: int | None = None
    top_p: float | None = None
    max_new_tokens: int | None = None
    stop_strings: str | None = None   # the box's text, one per line
    chat: bool | None = None
    confidence_stop: float | None = None
    pinned: bool = False          # class=1: pair and k locked for this page
    prompts: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)


def _values(params, name: str) -> list[str]:
    """Every value of `name` in a query (starlette's QueryParams, or a plain mapping in tests)."""
    if hasattr(params, "getlist"):
        return list(params.getlist(name))
    value = params.get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _one(params, name: str) -> str | None:
    values = _values(params, name)
    return values[-1] if values else None


def _number(params, name: str, parse, low, high, problems: list[str]):
    """The link's `name` parsed by the form's own parser and within [low, high]; None (and one line in
    `problems`) when it is not, None when the link does not name it."""
    raw = _one(params, name)
    if raw is None:
        return None
    try:
        value = parse(name, raw)
        if not low <= value <= high:
            shown = [f"{x:g}" if isinstance(x, float) else str(x) for x in (low, high, value)]
            raise SpecvizError(f"{name} must be between {shown[0]} and {shown[1]}, not {shown[2]}")
        return value
    except SpecvizError as err:
        problems.append(str(err))
        return None


def read_link(app: AppState, params) -> Opening:
    """The link's values, each checked as the form's own would be; a refused one is named in `problems`."""
    out = Opening()
    if not params:
        return out
    pair = _one(params, "pair")
    if pair is not None:
        if pair in app.pairs.presets:
            out.pair = pair
        else:
            out.problems.append(f"pair {pair[:40]!r} is not one of this server's pairs "
                                f"({', '.join(app.pairs.presets)})")
    preset = app.pairs.presets.get(out.pair) if out.pair else app.pairs.default_preset()
    text = _one(params, "prompt")
    if text is not None:
        try:
            out.prompt = check_prompt(text, app.max_prompt_chars)
        except SpecvizError as err:
            out.problems.append(str(err))
    low, high = app.limits.k_range
    out.k = _number(params, "k", as_int, low, high, out.problems)
    out.temperature = _number(params, "temperature", as_float, 0, TEMPERATURE_MAX, out.problems)
    out.seed = _number(params, "seed", as_int, 0, MAX_SEED, out.problems)
    _read_more(app, params, preset, out)
    out.pinned = _one(params, "class") in ("1", "true", "yes", "on")
    prompts = []
    for text in _values(params, "prompts")[:MAX_PROMPTS]:
        try:
            prompts.append(check_prompt(text, app.max_prompt_chars))
        except SpecvizError as err:
            out.problems.append(f"a class prompt: {err}")
    out.prompts = tuple(prompts)
    if out.pinned and out.k is None and preset is not None:
        out.k = preset.k          # pinned: the preset's own k, whatever this laptop measured
    return out


def _read_more(app: AppState, params, preset, out: Opening) -> None:
    """The OPTIONAL fields a link names, into `out`, each checked as the form's would be."""
    problems = out.problems
    shape = _one(params, "tree")
    if shape is not None:
        try:
            parsed = draft_shape(shape)
            out.tree = CHAIN if parsed is None else ",".join(map(str, parsed))
        except SpecvizError as err:
            problems.append(str(err))
    drafter = _one(params, "drafter")
    if drafter is not None:
        if drafter in DRAFTERS:
            out.drafter = drafter
        else:
            problems.append(f"drafter must be one of {', '.join(DRAFTERS)}, not {drafter[:40]!r}")
    out.adaptive_k = _switch(params, "adaptive_k", problems)
    out.top_k = _number(params, "top_k", as_int, 0, TOP_K_MAX, problems)
    out.top_p = _number(params, "top_p", as_float, TOP_P_MIN, 1.0, problems)
    out.max_new_tokens = _number(params, "max_new_tokens", as_int, 1, app.limits.max_new_tokens, problems)
    out.confidence_stop = _number(params, "confidence_stop", as_float, 0.0, CONFIDENCE_STOP_MAX, problems)
    stops = _one(params, "stop_strings")
    if stops is not None:
        try:
            out.stop_strings = "\n".join(stop_strings(stops))
        except SpecvizError as err:
            problems.append(str(err))
    chat = _switch(params, "chat", problems)
    if chat and preset is not None and not preset.chat:
        problems.append("chat: this pair has no chat template")
    else:
        out.chat = chat


def _switch(params, name: str, problems: list[str]) -> bool | None:
    """An on/off value (1/0, true/false, yes/no, on/off); None, and a line, for anything else."""
    raw = _one(params, name)
    if raw is None:
        return None
    if str(raw).strip().lower() in YES + NO:
        return str(raw).strip().lower() in YES
    problems.append(f"{name} must be 1 or 0, not {str(raw)[:40]!r}")
    return None


def link_query(values: dict, defaults: dict | None = None, pinned: bool = False, prompts=()) -> str:
    """The share link's query for the form's `values` (RunRequest's names; URL-encoded: the page adds its
    own address): the ALWAYS fields, then each OPTIONAL one that differs from `defaults` (form_defaults),
    then `class=1` when `pinned` and one `prompts` per example prompt given."""
    defaults = defaults or {}
    query = [("pair", values.get("preset")), ("prompt", values.get("prompt") or "")]
    query += [(name, values.get(name)) for name in ALWAYS[2:]]          # k, temperature, seed
    for name in OPTIONAL:
        value = _linked(name, values.get(name))
        if value is not None and value != _linked(name, defaults.get(name)):
            query.append((name, value))
    query = [(name, _plain(value)) for name, value in query if value is not None]
    if pinned:
        query.append(("class", "1"))
    query += [("prompts", p) for p in prompts]
    return urlencode(query)


def _linked(name: str, value):
    """A field's value as a link writes it (so equal settings compare equal): None for an unset or
    unreadable one, which the link leaves out (the race would refuse it)."""
    if value is None:
        return None
    try:
        if name == "tree":
            shape = draft_shape(value)
            return CHAIN if shape is None else ",".join(map(str, shape))
        if name == "stop_strings":
            return "\n".join(stop_strings(value))
        if name in ("adaptive_k", "chat"):
            return "1" if value is True else "0" if value is False else None
        if name in ("top_k", "max_new_tokens"):
            return str(as_int(name, value))
        if name in ("top_p", "confidence_stop"):
            return _plain(round(as_float(name, value), 6))
    except SpecvizError:
        return None
    return value if isinstance(value, str) else None


def _plain(value) -> str:
    """A number as the form shows it (4, not 4.0), anything else as text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
