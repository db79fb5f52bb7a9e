"""A web font cut to the Chinese characters each edition uses, so Chinese renders on a machine without a CJK font.

``python -m vit_edu.book.cjk_font --font NotoSansCJK-Regular.ttc --site _build/html`` (run by ``make book``) reads
every page and script of each edition (the English site, the Chinese one under ``zh/``), keeps the font's glyphs for
the CJK characters found there (fontTools' subsetter, the engine of ``pyftsubset``) and writes them as WOFF2 into
that edition's ``_static``: the English pages' glosses (位置编码) use some 330 characters, a quarter of the Chinese
edition's, so an English reader fetches a font a quarter the size. ``vit.css`` declares it with a ``unicode-range``,
so a browser downloads it only for a page that has Chinese text.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

FONT_FILE = "vit-cjk.woff2"
# Must match vit.css's unicode-range: CJK symbols and punctuation, CJK ideographs (and extension A), full-width forms.
RANGES = ((0x3000, 0x303F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF))
# Punctuation Chinese shares with English (· — ‘ ’ “ ” …): full-width from this font on Chinese pages only (vit.css's
# second face), so that English pages keep their own quotes and do not download the font for them.
PUNCTUATION = ((0x00B7, 0x00B7), (0x2014, 0x2014), (0x2018, 0x2019), (0x201C, 0x201D), (0x2026, 0x2026))
SKIP = ("mathjax", "ort")  # third-party files under _static: no text of the book


def is_cjk(ch: str) -> bool:
    return any(a <= ord(ch) <= b for a, b in RANGES + PUNCTUATION)


def site_characters(site: Path, skip: tuple[Path, ...] = ()) -> set[str]:
    """The CJK characters in the site's HTML and JavaScript (pages, the search index, the Try-it page's script),
    leaving out the folders in ``skip`` (another edition's)."""
    found: set[str] = set()
    for path in site.rglob("*"):
        if path.suffix in (".html", ".js") and not any(part in SKIP for part in path.parts) \
                and not any(folder in path.parents for folder in skip):
            found |= {ch for ch in path.read_text(encoding="utf-8", errors="ignore") if is_cjk(ch)}
    return found


def face_index(font: Path, family: str) -> int:
    """The index of ``family`` (such as "Noto Sans CJK SC") in a font collection (.ttc); 0 for a single font."""
    if font.suffix.lower() != ".ttc":
        return 0
    names = [f["name"].getDebugName(1) for f in TTCollection(font).fonts]
    if family not in names:
        raise ValueError(f"{font} has no face {family!r}; it has {names}")
    return names.index(family)


def subset_font(font: Path, characters: set[str], out: Path, family: str = "Noto Sans CJK SC") -> int:
    """Writes the glyphs of ``characters`` from ``font`` to ``out`` as WOFF2; returns its size in bytes."""
    options = subset.Options()
    options.flavor = "woff2"
    options.name_IDs = ["*"]  # keep the licence and the family name
    options.notdef_outline = True
    # No hinting, flat outlines: a fifth smaller (90 against 112 KiB for 350 characters), as sharp on screens.
    options.hinting, options.desubroutinize = False, True
    source = TTFont(font, fontNumber=face_index(font, family))
    missing = sorted(ch for ch in characters if ord(ch) not in source.getBestCmap())
    if missing:
        raise ValueError(f"{font} lacks {len(missing)} character(s) the site uses: {''.join(missing[:40])}")
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(ch) for ch in characters))
    subsetter.subset(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    source.flavor = "woff2"
    source.save(out)
    return out.stat().st_size


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--font", type=Path, required=True, help="an OpenType font or collection with Chinese")
    parser.add_argument("--site", type=Path, default=Path("_build/html"))
    parser.add_argument("--family", default="Noto Sans CJK SC", help="the face to take from a .ttc collection")
    args = parser.parse_args(argv)
    # An edition is a folder with _static/vit.css: the site itself (English) and zh/ inside it (Chinese).
    editions = sorted(p.parent for p in args.site.rglob("_static") if (p / "vit.css").exists())
    if not editions:
        raise SystemExit(f"{args.site} has no _static/vit.css: build the book first")
    for root in editions:
        characters = site_characters(root, skip=tuple(e for e in editions if e != root and root in e.parents))
        size = subset_font(args.font, characters, root / "_static" / FONT_FILE, args.family)
        print(f"{root}: {len(characters)} Chinese characters, {size / 1024:.0f} KiB of WOFF2 in _static/{FONT_FILE}")


if __name__ == "__main__":
    main()
