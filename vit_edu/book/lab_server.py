"""How ``make lab`` starts Jupyter Lab on the Lab edition: its save hook, its kernels' language, quiet defaults, a font.

- The save hook (:data:`SAVE_HOOK`) keeps each widget cell's precomputed player (see :mod:`vit_edu.book.lab_edition`).
- The kernels inherit :data:`vit_edu.widgets.LAB_KERNEL`, the book's language: they skip the player and, in the
  Chinese edition, show the live widgets in Chinese.
- Defaults a learner's own settings still override (``lab_config/labconfig``, on ``JUPYTER_CONFIG_PATH``): no
  "Jupyter news" prompt; Markdown files (the glossary) open rendered.
- Kernels talk over local sockets (IPC) where the system has them, not unencrypted TCP with a warning per kernel;
  the copies are trusted when written, so Jupyter shows their players and logs no "not trusted" line.
- The Chinese edition ships its own CJK font (the characters it uses, cut from the font ``make book`` uses) through
  Jupyter Lab's custom CSS, so Chinese reads on a system without a Chinese font.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir
from nbformat.sign import NotebookNotary

from vit_edu.widgets import LAB_KERNEL

SAVE_HOOK = "vit_edu.book.lab_edition.pre_save_hook"
DEFAULTS = Path(__file__).with_name("lab_config")  # on JUPYTER_CONFIG_PATH: labconfig/default_setting_overrides.json
FONT_FILE = "vit-cjk.woff2"
# The CJK face for the interface, the prose and the outputs (and after code's own fonts, for Chinese in outputs).
CUSTOM_CSS = """/* The book's CJK font (vit_edu.book.lab_server): Chinese without a system font. */
@font-face {
  font-family: "ViT CJK"; src: url("%(font)s") format("woff2"); font-display: swap;
  unicode-range: U+00B7, U+2014, U+2018-2019, U+201C-201D, U+2026, U+3000-303F, U+3400-4DBF, U+4E00-9FFF, U+FF00-FFEF;
}
body {
  --jp-ui-font-family: "ViT CJK", system-ui, -apple-system, blinkmacsystemfont, "Segoe UI", helvetica, arial,
    sans-serif;
  --jp-content-font-family: "ViT CJK", system-ui, -apple-system, blinkmacsystemfont, "Segoe UI", helvetica, arial,
    sans-serif;
  --jp-code-font-family: menlo, consolas, "DejaVu Sans Mono", "ViT CJK", monospace;
}
"""


def lab_command(folder: Path, style: Path | None = None) -> list[str]:
    """The command that starts Jupyter Lab on ``folder`` with the save hook (``make lab``, the tests); ``style``: a
    folder with a ``custom.css`` (:func:`write_font_style`) to load before the user's own."""
    command = [sys.executable, "-m", "jupyterlab", str(folder), f"--ContentsManager.pre_save_hook={SAVE_HOOK}"]
    if os.name == "posix":
        command.append("--KernelManager.transport=ipc")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # a container's root (Docker, Colab's VM): Jupyter asks for it
        command.append("--allow-root")
    if style is not None:
        # Where /custom/ is served from (not a setting of its own): this folder, then the user's own custom.css.
        settings = {"static_custom_path": [str(style.resolve()), str(Path(jupyter_config_dir()) / "custom")]}
        command += ["--LabApp.custom_css=True", f"--ServerApp.tornado_settings={settings!r}"]
    return command


def lab_environment(language: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the kernels' language and the book's Lab defaults."""
    env = dict(os.environ if base is None else base)
    env[LAB_KERNEL] = language
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(DEFAULTS), env.get("JUPYTER_CONFIG_PATH")]))
    return env


def trust(paths: list[Path], data_dir: Path | None = None) -> None:
    """Sign the notebooks the book wrote, as Jupyter signs a notebook its user saves, in the signature database of
    ``data_dir`` (default: Jupyter's, as Jupyter Lab reads it): their players may run."""
    data_dir = Path(data_dir or jupyter_data_dir())
    data_dir.mkdir(parents=True, exist_ok=True)  # a first run of Jupyter on this machine: the database needs its folder
    notary = NotebookNotary(data_dir=str(data_dir))
    for path in paths:
        notary.sign(nbformat.read(path, as_version=4))


def lab_characters(folder: Path, locale: Path) -> set[str]:
    """The CJK characters of the Lab folder's files and of the translations a Chinese kernel shows (its .po files)."""
    from vit_edu.book.cjk_font import is_cjk

    found: set[str] = set()
    for path in [*folder.glob("*.ipynb"), *folder.glob("*.md"), *locale.glob("*.po")]:
        found |= {ch for ch in path.read_text(encoding="utf-8", errors="ignore") if is_cjk(ch)}
    return found


def write_font_style(font: Path, characters: set[str], style: Path) -> bool:
    """``style/custom.css`` and the font cut to ``characters``; False where they were already so (nothing written)."""
    from vit_edu.book.cjk_font import subset_font

    listed = style / "characters.txt"
    wanted = "".join(sorted(characters))
    if (style / FONT_FILE).exists() and listed.exists() and listed.read_text(encoding="utf-8") == wanted:
        return False
    subset_font(font, characters, style / FONT_FILE)
    (style / "custom.css").write_text(CUSTOM_CSS % {"font": FONT_FILE}, encoding="utf-8")
    listed.write_text(wanted, encoding="utf-8")
    return True
