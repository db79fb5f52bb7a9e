"""The learner's copies in the Lab folder: refreshed when the book changes, never overwritten once edited.

A hidden manifest (``.lab_edition.json``) records a hash of what was last written to each file. A copy whose
content still has that hash (the learner ran it at most: outputs do not count, cells and their sources do) is
replaced by a newer edition; an edited copy is kept, and the learner is told when the book's version has changed.
Asked for a fresh copy (``--fresh NAME``), the edited one is moved aside with a timestamp, never deleted.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

MANIFEST = ".lab_edition.json"


@dataclass
class Update:
    """What happened to one file of the Lab folder: new, updated, unchanged, yours, kept or fresh."""

    path: Path
    status: str
    backup: Path | None = None

    @property
    def message(self) -> str:
        """One line for the learner ("" when there is nothing to say)."""
        name, stem = self.path.name, self.path.stem
        if self.status == "updated":
            return f"{name}: updated to the book's new version (you had not edited your copy)."
        if self.status == "kept":
            return (f"{name}: kept as you edited it, but the book's version has changed since. For a fresh copy, "
                    f"with yours kept beside it: make lab FRESH={stem} "
                    f"(or python -m vit_edu.book.lab_edition {self.path.parent} --fresh {stem}).")
        if self.status == "fresh":
            return f"{name}: a fresh copy of the book's version; yours is now {self.backup.name}."
        return ""


def content_key(name: str, text: str) -> str | None:
    """A hash of what a learner writes in a file: a notebook's cell types and sources (not outputs), else the text.

    None for a notebook that does not parse (a damaged copy counts as edited).
    """
    if name.endswith(".ipynb"):
        try:
            cells = json.loads(text)["cells"]
            text = json.dumps([[c["cell_type"], "".join(c["source"])] for c in cells])
        except (ValueError, KeyError, TypeError):
            return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup, n = path.with_name(f"{path.stem}.backup-{stamp}{path.suffix}"), 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.stem}.backup-{stamp}-{n}{path.suffix}")
    return backup


def _wanted_fresh(fresh: list[str], names: list[str]) -> set[str]:
    if "all" in fresh:
        return set(names)
    by_stem = {Path(n).stem: n for n in names}
    unknown = [f for f in fresh if f not in names and f not in by_stem]
    if unknown:
        raise ValueError(f"--fresh names {unknown}, which are not in the Lab edition; its files are {sorted(by_stem)}")
    return {by_stem.get(f, f) for f in fresh}


def update_copies(editions: dict[str, str], out: Path, fresh: list[str]) -> list[Update]:
    """Write each ``name -> text`` edition into ``out`` unless the learner's copy there is edited; one Update each.

    ``fresh``: names (or "all") whose edited copies are moved aside (``NAME.backup-TIME.ipynb``) and replaced.
    """
    wanted = _wanted_fresh(fresh, list(editions))
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    written = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    updates = []
    for name, text in editions.items():
        target, key = out / name, content_key(name, text)
        if not target.exists():
            status, backup = "new", None
        else:
            current = content_key(name, target.read_text(encoding="utf-8", errors="replace"))
            if current == key:
                written[name] = key  # the same cells and sources: leave the learner's outputs alone
                updates.append(Update(target, "unchanged"))
                continue
            if current is not None and current == written.get(name):
                status, backup = "updated", None
            elif name in wanted:
                status, backup = "fresh", _backup_path(target)
                target.rename(backup)
            else:
                updates.append(Update(target, "yours" if written.get(name) == key else "kept"))
                continue
        target.write_text(text, encoding="utf-8")
        written[name] = key
        updates.append(Update(target, status, backup))
    manifest_path.write_text(json.dumps(written, indent=1, sort_keys=True) + "\n")
    return updates
