"""Show the package's own source in the book, so a chapter never pastes a copy that could drift."""

from __future__ import annotations

import inspect

from IPython.display import Markdown


def show_source(obj: object) -> Markdown:
    """The source of a ``vit_edu`` function, class or method as a highlighted Markdown code block."""
    return Markdown(f"```python\n{inspect.getsource(obj).rstrip()}\n```")
