"""The set-up cell that opens every chapter and homework notebook, kept in step with the book's repository.

Where ``vit_edu`` imports (``make lab``, Binder, any ``pip install``) the cell does nothing. Where it does not
(Colab, a bare Jupyter) it installs the package with pip from ``VIT_EDU_SOURCE`` when that is set (a ``file://``
path to a checkout or a wheel, or any pip URL), else from the repository that ``_config.yml`` names
(``repository.url``). ``python -m vit_edu.book.launch`` rewrites the cell in every notebook after that setting
changes (``make book`` runs it); the tests check that every notebook carries the current cell.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import nbformat

TAG = "vit-edu-setup"  # cell tag that marks the set-up cell
ROOT = Path(__file__).resolve().parents[2]  # the checkout (editable install)


def repository(config_path: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """``(url, branch)`` of the book's repository: ``BOOK_REPOSITORY_URL`` if set and not empty, else ``_config.yml``'s."""
    import yaml  # here: the homework grader imports this module for TAG and has no need of pyyaml

    settings = yaml.safe_load(config_path.read_text()).get("repository") or {}
    url = os.environ.get("BOOK_REPOSITORY_URL") or settings.get("url") or ""
    return url.rstrip("/"), settings.get("branch") or "main"


def setup_source(url: str, branch: str = "main", extras: str = "notebooks") -> str:
    """The set-up cell's code for a repository ``url`` (empty: none configured, so only VIT_EDU_SOURCE works)."""
    default = f'"git+{url}@{branch}"' if url else "None"
    return (
        "# Set-up: installs the book's package where it is missing (Colab); where vit_edu is installed, does nothing.\n"
        "import importlib.util, os, subprocess, sys\n"
        'if importlib.util.find_spec("vit_edu") is None:\n'
        f'    source = os.environ.get("VIT_EDU_SOURCE", {default})\n'
        "    if source is None:\n"
        '        raise RuntimeError("vit_edu is not installed: in the book\'s folder, run pip install -e \\".[notebooks]\\"")\n'
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", f"vit-edu[{extras}] @ {{source}}"],\n'
        "                   check=True)"
    )


def extras_for(path: Path) -> str:
    """Homework notebooks also need otter-grader, for their checks."""
    return "notebooks,homework" if "homework" in path.parts else "notebooks"


def sync(paths: list[Path], url: str, branch: str) -> list[Path]:
    """Make each notebook's first code cell the set-up cell (inserting it if absent); the notebooks changed."""
    changed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        source = setup_source(url, branch, extras_for(path))
        cells = [c for c in nb.cells if c.cell_type == "code"]
        if cells and TAG in cells[0].metadata.get("tags", []):
            if cells[0].source == source:
                continue
            cells[0].source = source
        else:
            cell = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG]})
            cell.execution_count = None
            first_code = nb.cells.index(cells[0]) if cells else len(nb.cells)
            nb.cells.insert(first_code, cell)
        nbformat.write(nb, path)
        changed.append(path)
    return changed


def book_notebooks(root: Path = ROOT) -> list[Path]:
    """Every chapter notebook and homework master (generated student copies excluded)."""
    return sorted(p for p in (root / "book").rglob("*.ipynb")
                  if "student" not in p.parts and ".ipynb_checkpoints" not in p.parts)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Write the set-up cell for the configured repository into every notebook.")
    p.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook under book/")
    args = p.parse_args(argv)
    url, branch = repository()
    for path in sync(args.notebooks or book_notebooks(), url, branch):
        print(f"set-up cell written: {path}")


if __name__ == "__main__":
    main()
