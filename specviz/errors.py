"""The one exception type specviz raises for problems a user can fix (bad input, bad model).

Its message is a single readable line meant to be shown as is (CLI, page, API error);
anything else that escapes is a bug.
"""


class SpecvizError(Exception):
    """A problem the user can act on; str(err) is a one-line explanation (the CLI, the server's log).

    `visitor`, when given, says the same to a web visitor: no server paths, no command-line advice
    (app/visitor_text.py shows it, or str(err) with any path taken out)."""

    def __init__(self, *args, visitor: str | None = None):
        super().__init__(*args)
        self.visitor = visitor


class ConfigError(SpecvizError, ValueError):
    """A setting is out of range or of the wrong type. `field`, when given, is the setting's name in
    `SpecConfig` (a front end names it in its own words: app/settings.py)."""

    def __init__(self, *args, visitor: str | None = None, field: str | None = None):
        super().__init__(*args, visitor=visitor)
        self.field = field


class LoadError(SpecvizError):
    """A model or tokenizer could not be loaded, or the two models do not fit together.

    `transient`: the failure came from a passing state of this process (memory short for a
    moment, an unexpected error inside the load), not from the model or the network, so a cache
    does not remember it: the next visitor tries again."""

    def __init__(self, *args, visitor: str | None = None, transient: bool = False):
        super().__init__(*args, visitor=visitor)
        self.transient = transient


class ProfileError(SpecvizError):
    """spaces.yaml (presets and limits) is malformed; the message names the key."""


class RemoteError(SpecvizError):
    """A serving engine (vLLM) could not be used: down, not vLLM, no speculation or per-request metrics,
    too slow, or an answer that is not a completion. The message says which and what to do."""
