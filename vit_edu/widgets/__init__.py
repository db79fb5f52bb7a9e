"""Interactive views: one pure ``view(**controls) -> (Figure, caption)`` per widget, shown two ways.

In Jupyter, :func:`live` wraps a view in ipywidgets that re-render on every move. On the website, where
no kernel runs, :func:`vit_edu.frames.frame_player` shows the same view precomputed over the control
values. Tests sweep each view over its full control ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from vit_edu.frames import Frame, figure_png_bytes


def _control(name: str, values: Sequence[Any], value: Any) -> widgets.ValueWidget:
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return widgets.SelectionSlider(options=list(values), value=value, description=name, continuous_update=False)
    return widgets.Dropdown(options=list(values), value=value, description=name)


def live(
    view: Callable[..., Frame],
    controls: dict[str, Sequence[Any]],
    *,
    start: dict[str, Any] | None = None,
    dpi: int = 80,
) -> widgets.VBox:
    """A widget box: one control per entry of ``controls``, the view's figure and its caption below.

    The figure is shown as PNG bytes in a ``widgets.Image`` rather than displayed into a ``widgets.Output``:
    no display message is sent, so notebooks with live widgets also execute headless (``make execute``).
    """
    start = start or {}
    inputs = {name: _control(name, values, start.get(name, values[0])) for name, values in controls.items()}
    picture = widgets.Image(format="png")
    caption = widgets.HTML()

    def update(_change: object = None) -> None:
        fig, text = view(**{name: w.value for name, w in inputs.items()})
        picture.value = figure_png_bytes(fig, dpi)
        caption.value = text

    for w in inputs.values():
        w.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox(list(inputs.values())), picture, caption])
