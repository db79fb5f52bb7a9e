"""Interactive views: one pure ``view(**controls) -> (Figure, caption)`` per widget, shown two ways.

In Jupyter, :func:`live` wraps a view in ipywidgets that re-render on every move. On the website, where
no kernel runs, :func:`vit_edu.widgets.frames.frame_player` shows the same view precomputed over the control
values. :func:`explore` gives both from one cell: one output whose widget view Jupyter shows while the
kernel runs, and whose HTML (the player) the website and any kernel-less viewer show. Tests sweep each
view over its full control ranges.

The Lab edition's kernels (``python -m vit_edu.book.lab_edition --start``, ``make lab``) run with the environment
variable :data:`LAB_KERNEL` set to the book's language, ``en`` or ``zh``. There :func:`explore` skips the player,
which Lab never shows (its save hook puts the chapter's own player back), and for ``zh`` the live widget's labels,
menu options, captions and notes come from the Chinese edition's output catalogue. Unset (``make execute``, nbval,
Colab, Binder, plain Jupyter), :func:`explore` builds the player and speaks English.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from vit_edu.widgets.frames import Frame, control_title, figure_png_bytes, frame_player, png_size

# The Lab edition's kernels: the book's language (one of LAB_LANGUAGES); unset elsewhere. See the module's docstring.
LAB_KERNEL = "VIT_EDU_LAB_KERNEL"
LAB_LANGUAGES = ("en", "zh")
# Shown under every live widget: a widget whose kernel has gone keeps its last picture and ignores its controls.
RESTART_TEXT = "If moving a control changes nothing, the kernel has restarted or stopped: run this cell again."
# A Lab kernel's HTML fallback instead of the player: the first picture, kept where a save finds no player to restore.
LIVE_FALLBACK_CLASS = "vit-live-fallback"
LIVE_FALLBACK_TEXT = "The picture this cell showed when it ran. Run this cell for the live widget."
_NOTE_STYLE = "font-size: 0.85em; color: #666"
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
# A slider's handle at its maximum overhangs the track: its value text keeps a gap (a typed slider's readout too).
READOUT_STYLE = f"<style>.{LIVE_CLASS} .widget-readout {{ margin-left: 0.6em; }}</style>"


def lab_language() -> str | None:
    """The book's language where a Lab edition's kernel runs (:data:`LAB_KERNEL`), else None."""
    language = os.environ.get(LAB_KERNEL) or None
    if language is not None and language not in LAB_LANGUAGES:
        raise ValueError(f"{LAB_KERNEL}={language!r}: the Lab edition's languages are {LAB_LANGUAGES}")
    return language


def lab_words() -> Callable[[str], str] | None:
    """What turns the live widget's English into the Lab kernel's language; None for English."""
    if lab_language() != "zh":
        return None
    from vit_edu.book import output_text  # the book's tooling, needed only by the Chinese Lab's kernels

    table = output_text.chinese_outputs()
    return lambda text: output_text.translate_or_keep(text, table)


# Space after each control (and its value text), so a value never runs into the next control's label; a slider's
# value text also keeps 0.6 em from the slider, whose handle overhangs the track at its maximum.
_GAP = "2px 1.6em 2px 2px"
_READOUT_GAP = "2px 1.6em 2px 0.6em"


def _control(name: str, values: Sequence[Any], value: Any,
             words: Callable[[str], str] | None = None) -> widgets.ValueWidget:
    """A slider for numbers (an IntSlider with a typed readout when they are consecutive integers), else a menu
    (its options shown through ``words`` where given, their values unchanged)."""
    values = list(values)
    tr = words or str
    label = dict(description=tr(control_title(name)), style={"description_width": "initial"})
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values) and values == list(
        range(values[0], values[0] + len(values))
    ) and len(values) > 1:
        return widgets.IntSlider(value=value, min=values[0], max=values[-1], continuous_update=False,
                                 layout=widgets.Layout(width="min(100%, 32em)", margin=_GAP), **label)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        # A SelectionSlider's readout looks editable but ignores what is typed: hide it, show the value as text.
        return widgets.SelectionSlider(options=values, value=value, continuous_update=False, readout=False,
                                       layout=widgets.Layout(width="min(100%, 24em)"), **label)
    options = [(tr(str(v)), v) for v in values] if words else values
    return widgets.Dropdown(options=options, value=value, layout=widgets.Layout(margin=_GAP), **label)


def live(
    view: Callable[..., Frame],
    controls: dict[str, Sequence[Any]],
    *,
    start: dict[str, Any] | None = None,
    dpi: int = 80,
    words: Callable[[str], str] | None = None,
) -> widgets.VBox:
    """A widget box: one control per entry of ``controls``, the view's figure and its caption below.

    The figure is shown as PNG bytes in a ``widgets.Image`` rather than displayed into a ``widgets.Output``:
    no display message is sent, so notebooks with live widgets also execute headless (``make execute``). The
    picture keeps its own pixel size (never stretched, no empty box around a small one); the controls sit above
    it, so a picture of another height moves only what is below. A control with a single value is shown as text.
    ``words`` turns each text a reader sees (labels, options, captions, the note) into another language.
    """
    tr = words or str
    start = start or {}
    unknown = set(start) - set(controls)
    if unknown:
        raise ValueError(f"start names unknown controls {sorted(unknown)}; controls are {list(controls)}")
    fixed = {name: list(values)[0] for name, values in controls.items() if len(values) == 1}
    clash = {name: start[name] for name in fixed if name in start and start[name] != fixed[name]}
    if clash:
        raise ValueError(f"start values {clash} differ from the only values offered, {fixed}")
    inputs = {name: _control(name, values, start.get(name, values[0]), words)
              for name, values in controls.items() if name not in fixed}
    readouts = {name: widgets.Label(str(w.value), layout=widgets.Layout(margin=_READOUT_GAP))
                for name, w in inputs.items() if isinstance(w, widgets.SelectionSlider)}
    picture = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
    caption = widgets.HTML()

    def update(_change: object = None) -> None:
        fig, text = view(**fixed, **{name: w.value for name, w in inputs.items()})
        png = figure_png_bytes(fig, dpi)
        picture.layout.width = f"{png_size(png)[0]}px"
        picture.value = png
        caption.value = tr(text)
        for name, readout in readouts.items():
            readout.value = str(inputs[name].value)

    for w in inputs.values():
        w.observe(update, names="value")
    update()
    row = []  # in the order of ``controls``: each control, a slider's value text after it, a single value as text
    for name in controls:
        if name in fixed:
            text = f"{tr(control_title(name))} <b>{html.escape(tr(str(fixed[name])))}</b>"
            row.append(widgets.HTML(text, layout=widgets.Layout(margin=_GAP)))
        else:
            row += [inputs[name], readouts[name]] if name in readouts else [inputs[name]]
    controls_row = widgets.HBox(row, layout=widgets.Layout(flex_flow="row wrap", align_items="center"))
    note = f'<span style="{_NOTE_STYLE}">{tr(RESTART_TEXT)}</span>'
    box = widgets.VBox([controls_row, picture, caption, widgets.HTML(note + READOUT_STYLE + KEY_GUARD)])
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
    where they can. In a Lab edition's kernel (:data:`LAB_KERNEL`) the fallback is the live widget's first picture
    instead, and the widget speaks the book's language.
    """
    if lab_language() is not None:
        words = lab_words()
        box = live(view, controls, start=start, dpi=dpi, words=words)
        return Explorer(box, live_fallback(box, alt, words))
    site = site_controls or controls
    site_start = {k: v for k, v in (start or {}).items() if k in site and v in list(site[k])}
    player = frame_player(view, site, start=site_start, dpi=site_dpi, alt=alt)
    return Explorer(live(view, controls, start=start, dpi=dpi), player.data)


def live_fallback(box: widgets.VBox, alt: str, words: Callable[[str], str] | None = None) -> str:
    """HTML of a live widget's current picture and caption, with a note to run the cell (``words``: as in live)."""
    _controls, picture, caption, _note = box.children
    tr = words or str
    png = base64.b64encode(picture.value).decode("ascii")
    return (f'<div class="{LIVE_FALLBACK_CLASS}"><img alt="{html.escape(tr(alt))}" src="data:image/png;base64,{png}">'
            f'<div>{caption.value}</div><p style="{_NOTE_STYLE}">{html.escape(tr(LIVE_FALLBACK_TEXT))}</p></div>')
