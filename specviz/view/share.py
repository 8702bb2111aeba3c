"""The share link: a race's settings in the page's address, read when the page opens.

`?pair=KEY&prompt=TEXT&k=N&temperature=T&seed=S&tree=2,2,1,1` opens the page with that pair (its key,
not its label), prompt, k, temperature, seed and draft shape (a token tree; left out: a chain) in the form; `&class=1` pins the pair and k for everyone who
opens the link (the pair menu and k slider are locked, the measured-k suggestion hidden), and each
`&prompts=TEXT` (repeatable) replaces the pair's example prompts. `read_link` checks every value with
the app's own checks (app/settings.py): a bad one is left at its default and named in one line.
`link_query` writes the same query for the current form (the page's "copy link" control).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from ..app.settings import CHAIN, MAX_SEED, as_float, as_int, check_prompt, draft_shape
from ..app.state import AppState
from ..errors import SpecvizError

MAX_PROMPTS = 12              # example prompts a class link may set
TEMPERATURE_MAX = 2.0         # the form's temperature slider's range


@dataclass
class Opening:
    """What a link asks the form to open with: None leaves a field at its default."""
    pair: str | None = None
    prompt: str | None = None
    k: int | None = None
    temperature: float | None = None
    seed: int | None = None
    tree: str | None = None       # the draft shape box's text ("2,2,1,1"; "chain")
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
    shape = _one(params, "tree")
    if shape is not None:
        try:
            parsed = draft_shape(shape)
            out.tree = CHAIN if parsed is None else ",".join(map(str, parsed))
        except SpecvizError as err:
            out.problems.append(str(err))
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


def link_query(preset, prompt, k, temperature, seed, pinned=False, prompts=(), tree=None) -> str:
    """The share link's query for these form values (URL-encoded; the page adds its own address). The
    draft shape is written only when it is a tree (a chain is the default)."""
    pairs = [("pair", preset), ("prompt", prompt or ""), ("k", k), ("temperature", temperature), ("seed", seed)]
    try:
        shape = draft_shape(tree)
    except SpecvizError:
        shape = None          # a shape the race would refuse is left out of the link
    if shape is not None:
        pairs.append(("tree", ",".join(map(str, shape))))
    query = [(name, _plain(value)) for name, value in pairs if value is not None]
    if pinned:
        query.append(("class", "1"))
        query += [("prompts", p) for p in prompts]
    return urlencode(query)


def _plain(value) -> str:
    """A number as the form shows it (4, not 4.0), anything else as text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
