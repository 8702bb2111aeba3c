"""The form's settings, declared once: one row per field, from which everything else is made.

`SETTINGS` is the table. From it come RunRequest's fields and defaults (app/request.py), the form's
widgets, labels and slider ranges (view/form.py), the share link's read and write and what it leaves
out (view/share.py), the form fill from a link or a trace (view/form_fill.py), the page's words in a
refusal (`PAGE_WORDS`), the `/generate` signature (view/api.py) and the CLI's `--rule` (cli/run.py). A
field's value is checked by one function, `check` (app/settings.py), whichever surface it came from: a link
accepts what Run accepts.

Ranges: a slider's span is what the widget shows, never what is allowed; what is allowed is
SpecConfig's range (engine/loop/config.py), narrowed only by the hosting profile's k and max new
tokens. Every span lies inside SpecConfig's (tests/test_form_table.py proves it for every field).

Defaults, per surface (the one place that says so):
  - `default`: the form's value when a page opens, and the value a share link leaves out.
    PAIR means the pair's own (Preset's attribute of the same name); a slider's default is capped by
    its span's top (max new tokens: 128, or the host's limit where that is smaller).
  - `request`: RunRequest's and `/generate`'s default, where a client sends nothing. PAIR (as None)
    means the pair's own. They differ from `default` in one place: max new tokens, 64 for an API call
    (a short answer by default) against the page's 128 (a race long enough to measure).
Adding a field to the form is one row here (and SpecConfig's field of the same name) plus its test.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.loop.config import CONFIDENCE_STOP_MAX
from ..engine.loop.drafters import DEFAULT_DRAFTER

PAIR = "the pair's own"      # a default taken from the chosen pair (Preset's attribute of the same name)
HOST = "host"                # a span's top that is the hosting profile's limit (app/profile.py Limits)
CHAIN = "chain"              # the draft shape box's default: a chain of k
TEMPERATURE_TOP = 2.0        # the temperature slider's top (SpecConfig allows up to TEMPERATURE_MAX)
# The acceptance rules a race runs from the form and the CLI: the two lossless rules a learner compares
# (engine/loop/rules.py; the Rules tab races every registered rule).
RULE_CHOICES = ("exact", "block")


@dataclass(frozen=True)
class Setting:
    """One field of the form. `kind` says how a value is read: text, menu (one of a list), int, float,
    switch (true/false; 1/0 in a link), shape (the draft shape box: chain or 2,2,1,1) or stops (stop
    strings, one per line)."""
    name: str                  # RunRequest's name, and SpecConfig's where it has one
    kind: str
    words: str                 # the page's name for it: a refusal names the control the visitor sees
    label: str                 # the widget's label
    elem_id: str               # the widget's element id (the page's script and browser tests find it so)
    default: object            # the form's and the share link's (PAIR: the pair's own)
    request: object            # RunRequest's and /generate's (PAIR: the pair's own, sent as None)
    link: str = "optional"     # "always": in every link; "optional": where it differs from default; "": never
    api: int | None = None     # its place among /generate's parameters (clients send them by position: a new
                               # one goes last); None: not a /generate parameter
    span: tuple | None = None  # a slider's (low, high, step); high may be HOST
    info: str | None = None    # the widget's line of help
    choices: tuple = ()        # a menu's values where the table fixes them (the page's radio, the CLI's --rule)

    @property
    def on_pair(self) -> bool:
        """Whether the form's default is the pair's own (a new pair brings its own value)."""
        return self.default == PAIR


# The table. Its order is RunRequest's field order and the order every handler receives the form's
# values in (FORM_FIELDS: the page's events, /race among them, take them by position: a new row goes last).
SETTINGS = (
    Setting("prompt", "text", "prompt", "Prompt", "prompt", "", "", link="always", api=1),
    Setting("preset", "menu", "model pair", "Model pair", "preset", PAIR, None, link="always", api=2),
    Setting("custom_target", "text", "target hub id", "target hub id", "custom-target", "", "", link=""),
    Setting("custom_draft", "text", "draft hub id", "draft hub id", "custom-draft", "", "", link=""),
    Setting("drafter", "menu", "drafter", "Drafter", "drafter", DEFAULT_DRAFTER, DEFAULT_DRAFTER, api=9),
    Setting("k", "int", "k", "k (drafts per round)", "k", PAIR, 4, link="always", api=3, span=(1, HOST, 1)),
    Setting("adaptive_k", "switch", "adaptive k", "adaptive k", "adaptive", False, False),
    Setting("temperature", "float", "temperature", "temperature (0 = greedy)", "temperature", 0.0, 0.0,
            link="always", api=4, span=(0, TEMPERATURE_TOP, 0.05)),
    Setting("top_k", "int", "top-k", "top-k (0 = off)", "top-k", 0, 0, api=5, span=(0, 200, 1)),
    Setting("top_p", "float", "top-p", "top-p", "top-p", 1.0, 1.0, api=6, span=(0.05, 1, 0.01)),
    Setting("max_new_tokens", "int", "max new tokens", "max new tokens", "max-new", 128, 64, api=7,
            span=(1, HOST, 1)),
    Setting("seed", "int", "seed", "seed", "seed", 0, 0, link="always", api=8),
    Setting("stop_strings", "stops", "stop strings", "stop strings (one per line, optional)", "stop-strings", "", ""),
    Setting("chat", "switch", "chat", "chat template (wrap the prompt as a user message)", "chat", PAIR, PAIR,
            api=10),
    Setting("confidence_stop", "float", "draft confidence stop", "draft stops below p (0 = off)",
            "confidence-stop", PAIR, PAIR, api=11, span=(0, CONFIDENCE_STOP_MAX, 0.05),
            info="a round drafts no more after a token the draft gave less than p"),
    Setting("tree", "shape", "draft shape", "Draft shape: chain, or a token tree's candidates per depth (2,2,1,1)",
            "tree", CHAIN, "", info="a tree drafts several guesses a depth and the target checks every branch "
                                    "in one pass; k is then unused"),
    Setting("rule", "menu", "acceptance rule", "Acceptance rule", "rule", "exact", "exact", api=12,
            choices=RULE_CHOICES,
            info="block keeps at least as many drafts a round, with the same output distribution; at temperature "
                 "0 both are the argmax match, and a prompt-lookup draft (one token, q = 1) gains nothing"),
)
BY_NAME = {s.name: s for s in SETTINGS}
FORM_FIELDS = tuple(s.name for s in SETTINGS)
API_FIELDS = tuple(s.name for s in sorted((s for s in SETTINGS if s.api is not None), key=lambda s: s.api))
# The names in a share link: every link names the first ones; the others travel only where they differ.
ALWAYS = tuple(s.name for s in SETTINGS if s.link == "always")
OPTIONAL = tuple(s.name for s in SETTINGS if s.link == "optional")
# SpecConfig's refusals name a field as the page does ("max new tokens must be between ...").
PAGE_WORDS = {s.name: s.words for s in SETTINGS if s.words != s.name}


def span(setting: Setting, limits) -> tuple | None:
    """The slider's (low, high, step) with HOST replaced by the hosting profile's limit."""
    if setting.span is None:
        return None
    low, high, step = setting.span
    if high == HOST:
        high = limits.k_range[1] if setting.name == "k" else limits.max_new_tokens
    if setting.name == "k":
        low = limits.k_range[0]
    return low, high, step


def form_default(setting: Setting, limits, preset):
    """The form's value of `setting` when a page opens on `preset` (the value a share link leaves out)."""
    if setting.on_pair:
        if setting.name == "preset":
            return getattr(preset, "key", None)
        return getattr(preset, setting.name, None)
    spanned = span(setting, limits)
    if spanned is not None and isinstance(setting.default, (int, float)):
        return min(setting.default, spanned[1])
    return setting.default


def request_default(setting: Setting):
    """RunRequest's (and /generate's) default: None where it is the pair's own."""
    return None if setting.request == PAIR else setting.request
