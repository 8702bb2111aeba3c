"""Where specviz's files are: the repository root and the data beside the package, computed once.

specviz runs from a checkout (or a Space, which is one): the package reads assets/ (the bundled
models, the page's CSS and JavaScript), spaces.yaml (presets and limits) and benchmarks/ from the
folder that holds specviz/. Every module takes these paths from here instead of counting
`parent.parent.parent` itself. An installed copy (`pip install .`) carries the same files inside
the package (setup.py's package data, under specviz/_data/); `data_root` prefers the checkout and
falls back to that copy, and `require` says in one line which file is missing and why.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def data_root() -> Path:
    """The folder holding assets/ and spaces.yaml: the checkout when there is one, else the package's copy."""
    checkout = PACKAGE.parent
    if (checkout / "spaces.yaml").is_file():
        return checkout
    return PACKAGE / "_data"


ROOT = data_root()
ASSETS = ROOT / "assets"
MODELS = ASSETS / "models"            # the bundled pair and the shipped drafts
SPACES_YAML = ROOT / "spaces.yaml"    # the hosting profile: presets per tier and the server's limits
BENCHMARKS = ROOT / "benchmarks"
LESSON_PLAN = ROOT / "docs" / "workshop.md"   # shown in the Workshop tab


def require(path: Path) -> Path:
    """path itself if it exists, else a LoadError naming it (an installed copy without its data)."""
    if not path.exists():
        from .errors import LoadError
        raise LoadError(f"{path} is missing: specviz reads its data from the checkout it runs in "
                        f"(or the copy `pip install .` puts under specviz/_data)")
    return path
