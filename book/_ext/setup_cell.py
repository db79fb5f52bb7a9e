"""The notebooks' set-up cell, collapsed on the website.

Every notebook opens with the same set-up cell (tag ``vit-edu-setup``, :mod:`vit_edu.book.launch`): on Colab it
installs the book's package, elsewhere it does nothing. On the site it would be the first thing on every page, so
this extension collapses it behind a one-line toggle, as myst-nb's ``hide-cell`` tag does, without touching the
notebooks (Colab still needs the cell).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from vit_edu.book.launch import TAG

PROMPT_SHOW = "Show the set-up cell (on Colab it installs the book's package)"
PROMPT_HIDE = "Hide the set-up cell"
PROMPTS = {"en": (PROMPT_SHOW, PROMPT_HIDE), "zh": ("显示设置单元格（在 Colab 上它会安装本书的软件包）", "隐藏设置单元格")}


def collapse_setup_cells(document: nodes.Node, edition: str = "en") -> int:
    """Mark each set-up code cell as myst-nb marks a ``hide-cell`` one; return how many were marked."""
    show, hide = PROMPTS[edition]
    marked = 0
    for node in document.findall(nodes.container):
        if node.get("nb_element") == "cell_code" and TAG in node.get("cell_metadata", {}).get("tags", []):
            node["hide_mode"], node["prompt_show"], node["prompt_hide"] = "all", show, hide
            marked += 1
    return marked


class CollapseSetupCell(SphinxPostTransform):
    """Runs just before myst-nb's ``HideInputCells`` (priority 199), which draws the toggle."""

    default_priority = 198
    formats = ("html",)

    def run(self, **kwargs: object) -> None:
        collapse_setup_cells(self.document, getattr(self.config, "vit_edition", "en"))


def setup(app: Sphinx) -> dict:
    app.add_post_transform(CollapseSetupCell)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
