"""What a web visitor is told when loading or fetching a model fails: no server paths, no CLI advice.

The CLI and the server's log keep the full message (a folder, `python -m specviz fetch`, SPECVIZ_HOME:
what the host needs). A visitor can act on none of it, and a server's folders are no visitor's
business, so the app shows an error's `visitor` text where its source wrote one
(errors.SpecvizError), else its message with every absolute path replaced.
"""
from __future__ import annotations

import re

# An absolute or home-relative path, with the quotes around it: '/srv/app/assets/models/target', ~/x
PATH = re.compile(r"""'(?:~/|/)[^']*'|"(?:~/|/)[^"]*"|(?<![\w.:/])(?:~/|/)[^\s'"]+""")
ON_SERVER = "a folder on this server"


def for_visitor(err: BaseException) -> str:
    """The one line a visitor sees for `err`."""
    return without_paths(getattr(err, "visitor", None) or str(err))


def without_paths(text: str) -> str:
    return PATH.sub(ON_SERVER, text)


def one_line(value, limit: int = 120) -> str:
    """A value or an error's text as one line of at most `limit` characters (cut with an ellipsis)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
