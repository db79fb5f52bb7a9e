"""Interactive views: one pure ``view(**controls) -> (Figure, caption)`` per widget, shown two ways.

In Jupyter, :func:`live` wraps a view in ipywidgets that re-render on every move. On the website, where
no kernel runs, :func:`vit_edu.widgets.frames.frame_player` shows the same view precomputed over the control
values. :func:`explore` gives both from one cell: one output whose widget view Jupyter shows while the
kernel runs, and whose HTML (the player) the website and any kernel-less viewer show. Tests sweep each
view over its full control ranges.
"""

from __future__ import annotations

import html
import struct
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from vit_edu.widgets.frames import Frame, control_title, figure_png_bytes, frame_player

# Shown under every live widget: a widget whose kernel has gone keeps its last picture and ignores its controls.
RESTART_NOTE = (
    '<span style="font-size: 0.85em; color: #666">If moving a control changes nothing, the kernel has '
    "restarted or stopped: run this cell again.</span>"
)
# Keys pressed on a focused control belong to it. JupyterLab reads keys that reach the page as notebook shortcuts
# ("r" made the cell raw, arrows moved to another cell: ipywidgets issue #3912), so the widget's box stops plain
# keys (no Ctrl, Alt or Meta; not Escape, nor Shift+Enter, which runs the cell). ipywidgets offers no hook for
# this; an image that fails to load (an empty data URL) runs the one line that adds the listener.
KEY_GUARD = (
    '<img alt="" src="data:," style="display: none" onerror="'
    "var box = this.closest('.vit-live');"
    "if (box && !box.dataset.vitKeys) { box.dataset.vitKeys = '1';"
    " box.addEventListener('keydown', function (e) {"
    " if (!(e.ctrlKey || e.metaKey || e.altKey || e.key === 'Escape' || (e.shiftKey && e.key === 'Enter')))"
    " { e.stopPropagation(); } }); }"
    '">'
)
LIVE_CLASS = "vit-live"  # the widget box's class, which KEY_GUARD looks for


def _png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, read from the PNG header."""
    width, height = struct.unpack(">II", png[16:24])
    return width, height


# Space after each control (and its value text), so a value never runs into the next control's label.
_GAP = "2px 1.6em 2px 2px"


def _control(name: str, values: Sequence[Any], value: Any) -> widgets.ValueWidget:
    """A slider for numbers (an IntSlider with a typed readout when they are consecutive integers), else a menu."""
    values = list(values)
    label = dict(description=control_title(name), style={"description_width": "initial"})
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values) and values == list(
        range(values[0], values[0] + len(values))
    ) and len(values) > 1:
        return widgets.IntSlider(value=value, min=values[0], max=values[-1], continuous_update=False,
                                 layout=widgets.Layout(width="min(100%, 32em)", margin=_GAP), **label)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        # A SelectionSlider's readout looks editable but ignores what is typed: hide it, show the value as text.
        return widgets.SelectionSlider(options=values, value=value, continuous_update=False, readout=False,
                                       layout=widgets.Layout(width="min(100%, 24em)"), **label)
    return widgets.Dropdown(options=values, value=value, layout=widgets.Layout(margin=_GAP), **label)


def live(
    view: Callable[..., Frame],
    controls: dict[str, Sequence[Any]],
    *,
    start: dict[str, Any] | None = None,
    dpi: int = 80,
) -> widgets.VBox:
    """A widget box: one control per entry of ``controls``, the view's figure and its caption below.

    The figure is shown as PNG bytes in a ``widgets.Image`` rather than displayed into a ``widgets.Output``:
    no display message is sent, so notebooks with live widgets also execute headless (``make execute``). The
    picture keeps its own pixel size (never stretched, no empty box around a small one); the controls sit above
    it, so a picture of another height moves only what is below. A control with a single value is shown as text.
    """
    start = start or {}
    unknown = set(start) - set(controls)
    if unknown:
        raise ValueError(f"start names unknown controls {sorted(unknown)}; controls are {list(controls)}")
    fixed = {name: list(values)[0] for name, values in controls.items() if len(values) == 1}
    clash = {name: start[name] for name in fixed if name in start and start[name] != fixed[name]}
    if clash:
        raise ValueError(f"start values {clash} differ from the only values offered, {fixed}")
    inputs = {name: _control(name, values, start.get(name, values[0]))
              for name, values in controls.items() if name not in fixed}
    readouts = {name: widgets.Label(str(w.value), layout=widgets.Layout(margin=_GAP))
                for name, w in inputs.items() if isinstance(w, widgets.SelectionSlider)}
    picture = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
    caption = widgets.HTML()

    def update(_change: object = None) -> None:
        fig, text = view(**fixed, **{name: w.value for name, w in inputs.items()})
        png = figure_png_bytes(fig, dpi)
        picture.layout.width = f"{_png_size(png)[0]}px"
        picture.value = png
        caption.value = text
        for name, readout in readouts.items():
            readout.value = str(inputs[name].value)

    for w in inputs.values():
        w.observe(update, names="value")
    update()
    row = []  # in the order of ``controls``: each control, a slider's value text after it, a single value as text
    for name in controls:
        if name in fixed:
            text = f"{control_title(name)} <b>{html.escape(str(fixed[name]))}</b>"
            row.append(widgets.HTML(text, layout=widgets.Layout(margin=_GAP)))
        else:
            row += [inputs[name], readouts[name]] if name in readouts else [inputs[name]]
    controls_row = widgets.HBox(row, layout=widgets.Layout(flex_flow="row wrap", align_items="center"))
    box = widgets.VBox([controls_row, picture, caption, widgets.HTML(RESTART_NOTE + KEY_GUARD)])
    box.add_class(LIVE_CLASS)
    return box


class Explorer:
    """One output, two faces: the live widget where a kernel runs it, the precomputed player everywhere else."""

    def __init__(self, box: widgets.VBox, player_html: str) -> None:
        self.box, self.player_html = box, player_html

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.box._repr_mimebundle_())  # the widget view (and ipywidgets' text/plain)
        bundle["text/html"] = self.player_html  # what the website, and Jupyter without the kernel's widget, show
        bundle["text/plain"] = "An interactive view: run this cell in Jupyter to move its controls."
        return bundle


def explore(
    view: Callable[..., Frame],
    controls: dict[str, Sequence[Any]],
    *,
    site_controls: dict[str, Sequence[Any]] | None = None,
    start: dict[str, Any] | None = None,
    dpi: int = 80,
    site_dpi: int = 100,
    alt: str = "precomputed view",
) -> Explorer:
    """The live widget over ``controls`` and, as its fallback, the player over ``site_controls`` (default: the same).

    The player's start keeps the entries of ``start`` that it offers, so both faces open on the same picture
    where they can.
    """
    site = site_controls or controls
    site_start = {k: v for k, v in (start or {}).items() if k in site and v in list(site[k])}
    player = frame_player(view, site, start=site_start, dpi=site_dpi, alt=alt)
    return Explorer(live(view, controls, start=start, dpi=dpi), player.data)
