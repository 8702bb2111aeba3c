"""The share link: a race's settings in the page's address, read when the page opens.

`?pair=KEY&prompt=TEXT&k=N&temperature=T&seed=S` opens the page with that pair (its key, not its label),
prompt, k, temperature and seed in the form; every other field of the form travels only where it differs
from its default (`form_defaults`), under SpecConfig's name: `tree=2,2,1,1` (left out: a chain),
`drafter`, `adaptive_k`, `top_k`, `top_p`, `max_new_tokens`, `stop_strings` (one per line), `chat`,
`confidence_stop` (those two default to the pair's own) and `rule` (left out: exact). `&class=1` pins the pair and k for everyone who
opens the link (the pair menu and k slider are locked, the measured-k suggestion hidden), and each
`&prompts=TEXT` (repeatable) replaces the pair's example prompts. `read_link` checks every value with
the app's own check (app/settings.py `check_alone`, SpecConfig's ranges): a link accepts exactly what Run
accepts; a bad value is left at its default and named in one line. Which fields a link always names,
which it names only where they differ, and their defaults all come from the settings table
(app/form_table.py).
`link_query` writes the same query for the current form (the page's "copy link" control).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from ..app.form_table import ALWAYS, BY_NAME, CHAIN, OPTIONAL, form_default
from ..app.settings import as_float, as_int, check, check_alone, check_prompt
from ..app.state import AppState
from ..errors import SpecvizError

MAX_PROMPTS = 12              # example prompts a class link may set
YES, NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
# The settings a link carries besides the pair and the prompt, each read by `_read_value`.
VALUES = tuple(name for name in ALWAYS + OPTIONAL if name not in ("preset", "prompt"))


def form_defaults(app: AppState, preset) -> dict:
    """The form's value of each OPTIONAL field when a page opens on `preset` (the form starts from these)."""
    return {name: form_default(BY_NAME[name], app.limits, preset) for name in OPTIONAL}


@dataclass
class Opening:
    """What a link asks the form to open with: `values` holds the settings it named and the app accepted
    (the form's types: the draft shape and stop strings as the boxes' text); each reads as an attribute,
    None where the link leaves it at its default."""
    pair: str | None = None
    prompt: str | None = None
    values: dict = field(default_factory=dict)
    pinned: bool = False          # class=1: pair and k locked for this page
    prompts: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)

    def __getattr__(self, name: str):
        if name in VALUES:
            return self.__dict__.get("values", {}).get(name)
        raise AttributeError(name)


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


def read_link(app: AppState, params) -> Opening:
    """The link's values, each checked as Run checks it; a refused one is named in `problems`."""
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
    for name in VALUES:
        raw = _one(params, name)
        if raw is not None:
            value = _read_value(app, name, raw, out.problems)
            if value is not None:
                out.values[name] = value
    if out.chat and preset is not None and not preset.chat:
        out.problems.append("chat: this pair has no chat template")
        del out.values["chat"]
    out.pinned = _one(params, "class") in YES
    prompts = []
    for text in _values(params, "prompts")[:MAX_PROMPTS]:
        try:
            prompts.append(check_prompt(text, app.max_prompt_chars))
        except SpecvizError as err:
            out.problems.append(f"a class prompt: {err}")
    out.prompts = tuple(prompts)
    if out.pinned and out.k is None and preset is not None:
        out.values["k"] = preset.k          # pinned: the preset's own k, whatever this laptop measured
    return out


def _read_value(app: AppState, name: str, raw, problems: list[str]):
    """One setting a link names, as the form holds it, checked as Run checks it (a refusal names it by
    its name in the link); None, and a line in `problems`, when it is refused."""
    kind = BY_NAME[name].kind
    try:
        if kind == "switch":
            if str(raw).strip().lower() not in YES + NO:
                raise SpecvizError(f"{name} must be 1 or 0, not {str(raw)[:40]!r}")
            raw = str(raw).strip().lower() in YES
        value = check_alone(name, raw, app.limits, words=name)
    except SpecvizError as err:
        problems.append(str(err))
        return None
    return _as_text(kind, value) if kind in ("shape", "stops") else value


def _as_text(kind: str, checked) -> str:
    """A checked draft shape or stop strings as its box's text, in one written form ("2,2,1,1", "chain")."""
    if kind == "shape":
        return CHAIN if checked is None else ",".join(map(str, checked))
    return "\n".join(checked)


def link_query(values: dict, defaults: dict | None = None, pinned: bool = False, prompts=()) -> str:
    """The share link's query for the form's `values` (RunRequest's names; URL-encoded: the page adds its
    own address): the ALWAYS fields, then each OPTIONAL one that differs from `defaults` (form_defaults),
    then `class=1` when `pinned` and one `prompts` per example prompt given."""
    defaults = defaults or {}
    query = [("pair", values.get("preset")), ("prompt", values.get("prompt") or "")]
    query += [(name, values.get(name)) for name in ALWAYS if name not in ("preset", "prompt")]   # k, temperature, seed
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
    kind = BY_NAME[name].kind
    try:
        if kind in ("shape", "stops"):
            return _as_text(kind, check(name, value))
        if kind == "switch":
            return "1" if value is True else "0" if value is False else None
        if kind == "int":
            return str(as_int(name, value))
        if kind == "float":
            return _plain(round(as_float(name, value), 6))
    except SpecvizError:
        return None
    return value if isinstance(value, str) else None


def _plain(value) -> str:
    """A number as the form shows it (4, not 4.0), anything else as text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
