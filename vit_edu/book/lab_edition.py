"""The chapters for Jupyter Lab, with the prose's glued numbers and citations written in.

On the website myst-nb pastes each ``{glue:text}`name``` from the notebook's committed outputs and turns
``{cite:p}`key``` into "(Author, year)". Jupyter Lab knows neither role, so a learner would read placeholders.
``python -m vit_edu.book.lab_edition OUT`` (run by ``make lab``) copies the notebooks to ``OUT`` with both written
into the Markdown cells; the code cells are unchanged, so running a copy recomputes everything. The numbers in
the prose are those of the committed run (the cells that glue them print the fresh values).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
from pathlib import Path

import nbformat

GLUE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
CITE = re.compile(r"\{cite:([pt])\}`([^`]+)`")


def glued_values(nb: nbformat.NotebookNode) -> dict[str, str]:
    """name -> the text/plain value each ``glue(name, ...)`` call recorded in the notebook's outputs."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            record = out.get("metadata", {}).get("scrapbook")
            if record:
                text = out["data"].get(record["mime_prefix"] + "text/plain")
                if text is not None:
                    values[record["name"]] = text
    return values


def _paste(text: str, spec: str | None) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return format(value, spec) if spec else str(value)


def bib_labels(bib: Path) -> dict[str, tuple[str, str]]:
    """key -> (authors as cited, year) for each entry of a BibTeX file."""
    labels = {}
    for entry in re.split(r"\n(?=@)", bib.read_text(encoding="utf-8")):
        key = re.match(r"@\w+\{([^,]+),", entry.strip())
        if not key:
            continue
        author = re.search(r"author\s*=\s*\{(.*?)\},?\s*\n", entry, re.S)
        year = re.search(r"year\s*=\s*\{?(\d{4})", entry)
        names = [a.split(",")[0].strip(" {}") for a in author.group(1).split(" and ")] if author else ["?"]
        cited = names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al."
        labels[key.group(1).strip()] = (cited, year.group(1) if year else "n.d.")
    return labels


def lab_markdown(source: str, values: dict[str, str], labels: dict[str, tuple[str, str]]) -> str:
    """``source`` with glue roles replaced by their values and citations by "(Author, year)"."""

    def glue(m: re.Match) -> str:
        name, spec = m.group(1), m.group(2)
        if name not in values:
            raise ValueError(f"{{glue:text}}`{name}` has no glued value in the notebook's outputs")
        return _paste(values[name], spec)

    def cite(m: re.Match) -> str:
        keys = [k.strip() for k in m.group(2).split(",")]
        unknown = [k for k in keys if k not in labels]
        if unknown:
            raise ValueError(f"citation keys {unknown} are not in the bibliography")
        if m.group(1) == "t":
            return "; ".join(f"{labels[k][0]} ({labels[k][1]})" for k in keys)
        return "(" + "; ".join(f"{labels[k][0]}, {labels[k][1]}" for k in keys) + ")"

    return CITE.sub(cite, GLUE.sub(glue, source))


def write_lab_edition(book: Path, out: Path) -> list[Path]:
    """Copy every chapter notebook of ``book`` into ``out`` as its Lab edition; return the files written.

    A copy newer than its chapter (one the learner has worked in) is kept, not overwritten.
    """
    labels = bib_labels(book / "references.bib")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(book.glob("[0-9][0-9]_*.ipynb")):
        target = out / path.name
        if target.exists() and target.stat().st_mtime > path.stat().st_mtime:
            continue
        nb = nbformat.read(path, as_version=4)
        values = glued_values(nb)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = lab_markdown(cell.source, values, labels)
        nbformat.write(nb, target)
        written.append(target)
    for extra in ("glossary.md", "references.bib"):
        shutil.copy(book / extra, out / extra)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the Lab edition (for example _build/lab)")
    parser.add_argument("--book", type=Path, default=Path("book"))
    args = parser.parse_args()
    written = write_lab_edition(args.book, args.out)
    print(f"{len(written)} notebooks with numbers and citations written in: {args.out} "
          "(copies you have changed since are kept)")


if __name__ == "__main__":
    main()
