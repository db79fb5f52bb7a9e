"""Kernel-free stand-ins for widgets: every control setting rendered ahead of time, switched by a little JS.

A live ipywidget needs a Python kernel; the website has none. :func:`frame_player` renders one picture
(and an optional caption) per combination of control values and returns self-contained HTML (no CDN,
no external file) whose sliders and menus swap the pictures in the browser. The website's build moves the
frames into files of their own (:mod:`vit_edu.book.site_frames`), which the same script then loads on first use.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
from IPython.display import HTML
from matplotlib.figure import Figure

Frame = tuple[Figure, str]  # a picture and an HTML caption ("" for none)


def problem_frame(problem: str, figsize: tuple[float, float] = (4, 1.5)) -> Frame:
    """What a view shows for settings it cannot draw: the reason, in the picture and in the caption."""
    fig = Figure(figsize=figsize)
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, problem, ha="center", va="center", wrap=True, fontsize=9)
    return fig, f"<b>Nothing to show.</b> {problem}"

# The player's notes: where no script runs (the first), and in Jupyter before its cell has run (the second).
NOTE_STATIC = ("A picture computed in advance. Its controls appear where the page can run its script: on the book's "
               "website, or in Jupyter once you run this cell.")
NOTE_LIVE = "Pictures computed in advance. Run this cell for the live widget."

_SCRIPT = """
(function () {
  // The element that holds this script: found whether or not the page has put the player in the document yet.
  var root = document.currentScript ? document.currentScript.parentNode : document.getElementById("%(id)s");
  var data = JSON.parse(root.querySelector("script.vit-frames-data").textContent);
  var box = root.querySelector(".vit-frames-controls");
  var img = root.querySelector("img.vit-frames-image");
  var caption = root.querySelector(".vit-frames-caption");
  // The controls are built here, so a page that runs no script (a sanitised notebook view) shows no dead control.
  var inputs = data.titles.map(function (title, i) {
    var label = document.createElement("label"), input;
    label.appendChild(document.createTextNode(title + " "));
    if (data.kinds[i] === "fixed") {  // one value: a fact about every picture, not a control
      input = document.createElement("b");
      input.className = "vit-frames-fixed";
      input.textContent = data.labels[i][0];
      label.appendChild(input);
      box.appendChild(label);
      return input;
    }
    if (data.kinds[i] === "range") {
      input = document.createElement("input");
      input.type = "range"; input.min = "0"; input.max = String(data.sizes[i] - 1); input.step = "1";
    } else {
      input = document.createElement("select");
      data.labels[i].forEach(function (text, k) {
        var option = document.createElement("option");
        option.value = String(k); option.textContent = text; input.appendChild(option);
      });
    }
    input.value = String(data.start[i]);
    input.setAttribute("data-control", String(i));
    input.setAttribute("aria-label", title);
    label.appendChild(input);
    if (data.kinds[i] === "range") {
      var out = document.createElement("output");
      out.setAttribute("data-for", String(i)); out.setAttribute("aria-hidden", "true");
      label.appendChild(document.createTextNode(" ")); label.appendChild(out);
    }
    box.appendChild(label);
    return input;
  });
  function show() {
    var index = 0;
    inputs.forEach(function (input, i) {
      var k = data.kinds[i] === "fixed" ? 0 : Number(input.value), text = data.labels[i][k];
      index = index * data.sizes[i] + k;
      if (data.kinds[i] === "range") {
        input.setAttribute("aria-valuetext", text);
        root.querySelector("output[data-for='" + i + "']").textContent = text;
      }
    });
    // On the website each frame is a file (data.base + its name), fetched when first shown; else it is inline.
    var src = data.base ? data.base + data.frames[index][0] : "data:image/png;base64," + data.frames[index][0];
    if (img.getAttribute("src") !== src) { img.src = src; }
    caption.innerHTML = data.frames[index][1];
    root.dataset.frame = String(index);
  }
  inputs.forEach(function (input) { input.addEventListener("input", show); });
  // Keys pressed on a control are the control's: a notebook page must not read "r" or an arrow as its own shortcut.
  root.addEventListener("keydown", function (event) {
    if (!(event.ctrlKey || event.metaKey || event.altKey || event.key === "Escape")) { event.stopPropagation(); }
  });
  var note = root.querySelector(".vit-frames-note");
  if (note && root.closest(".jp-OutputArea, .output_area")) {
    // In Jupyter this is the stand-in, shown until the cell runs: say where the live widget is.
    note.textContent = "%(live)s";
  } else if (note) {
    note.remove();
  }
  show();
})();
"""


# The player's own layout, so it reads the same wherever its HTML lands (the website, a trusted notebook in
# Jupyter) without the site's stylesheet. Pictures keep their pixel size here; the site widens them (vit.css).
_STYLE = (
    ".vit-frames { border: 1px solid #ddd; border-radius: 6px; padding: 0.6em; margin: 1em 0; }"
    " .vit-frames-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 0.4em 1.2em;"
    " margin-bottom: 0.5em; font-size: 0.9em; }"
    " .vit-frames-controls label { display: inline-flex; align-items: center; gap: 0.4em; flex-wrap: wrap; }"
    " .vit-frames-controls input[type=range] { vertical-align: middle; width: min(16em, 60vw); }"
    " .vit-frames-note { font-size: 0.85em; color: #666; }"
    " .vit-frames-image { max-width: 100%; height: auto; display: block; }"
    " .vit-frames-caption { font-size: 0.9em; margin-top: 0.4em; } .vit-frames-caption table { margin: 0; }"
)


def figure_png_bytes(fig: Figure, dpi: int = 72) -> bytes:
    """PNG bytes of ``fig`` (closed afterwards so notebooks do not pile up figures)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(png: bytes | memoryview) -> tuple[int, int]:
    """Width and height of a PNG (bytes, or a widget's memoryview of them), from its header."""
    png = bytes(png[:24])
    if not png.startswith(PNG_SIGNATURE) or png[12:16] != b"IHDR":
        raise ValueError(f"not a PNG (it starts {png[:16]!r})")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def figure_to_png(fig: Figure, dpi: int = 72) -> str:
    """Base64 PNG of ``fig``, ready for a ``data:`` URL."""
    return base64.b64encode(figure_png_bytes(fig, dpi)).decode("ascii")


def _is_numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _kind(values: Sequence[Any]) -> str:
    """How the player shows a control: one value is a fixed, labelled fact; numbers get a slider, others a menu."""
    if len(values) == 1:
        return "fixed"
    return "range" if _is_numeric(values) else "select"


def control_title(name: str) -> str:
    """The label a reader sees for control ``name``: words, not a code identifier ('patch_size' -> 'patch size')."""
    return name.replace("_", " ")


def frame_index(sizes: Sequence[int], indices: Sequence[int]) -> int:
    """The frame shown for one value index per control: mixed radix over the controls, the last one fastest."""
    index = 0
    for size, k in zip(sizes, indices):
        index = index * size + k
    return index


def frame_player(
    render: Callable[..., Frame],
    controls: dict[str, Sequence[Any]],
    *,
    start: dict[str, Any] | None = None,
    dpi: int = 72,
    alt: str = "precomputed view",
) -> HTML:
    """Render ``render(**values)`` for every combination of ``controls`` and wrap the frames in a player.

    Numeric controls become sliders (announcing their value, not their index), others drop-down menus, and a
    control with a single value is shown as that value, labelled, since there is nothing to move; the page's
    script builds them, so where no script runs the first picture stands alone with a note. ``start``
    picks the first frame shown; ``start`` names that are not controls raise, values not offered do too.
    """
    if not controls or any(len(values) == 0 for values in controls.values()):
        raise ValueError(f"every control needs at least one value, got {({k: len(v) for k, v in controls.items()})}")
    names = list(controls)
    start = start or {}
    unknown = set(start) - set(names)
    if unknown:
        raise ValueError(f"start names unknown controls {sorted(unknown)}; controls are {names}")
    missing = {n: start[n] for n in start if start[n] not in list(controls[n])}
    if missing:
        raise ValueError(f"start values {missing} are not among the controls' values")
    start_index = [list(controls[n]).index(start[n]) if n in start else 0 for n in names]
    frames = []
    for combo in itertools.product(*(controls[n] for n in names)):
        fig, caption = render(**dict(zip(names, combo)))
        frames.append([figure_to_png(fig, dpi), caption])
    data = {
        "sizes": [len(controls[n]) for n in names],
        "labels": [[str(v) for v in controls[n]] for n in names],
        "titles": [control_title(n) for n in names],
        "kinds": [_kind(list(controls[n])) for n in names],
        "start": start_index,
        "frames": frames,
    }
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")  # safe inside <script>
    uid = "vit-frames-" + hashlib.sha1(payload.encode()).hexdigest()[:12]  # deterministic: nbval-friendly
    first = frame_index(data["sizes"], start_index)
    page = (
        f'<div class="vit-frames" id="{uid}">'
        f"<style>{_STYLE}</style>"
        '<div class="vit-frames-controls"></div>'
        f'<p class="vit-frames-note">{NOTE_STATIC}</p>'
        f'<img class="vit-frames-image" alt="{html.escape(alt)}" src="data:image/png;base64,{frames[first][0]}">'
        f'<div class="vit-frames-caption">{frames[first][1]}</div>'
        f'<script type="application/json" class="vit-frames-data">{payload}</script>'
        f"<script>{_SCRIPT % {'id': uid, 'live': NOTE_LIVE}}</script>"
        "</div>"
    )
    return HTML(page)
