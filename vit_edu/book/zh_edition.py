"""The Chinese edition's sources: the English book with its Markdown translated and everything else shared.

``python -m vit_edu.book.zh_edition OUT`` writes a second Jupyter Book into ``OUT`` (``make book`` uses
``_build/zh``): every page of ``_toc.yml`` with each Markdown block replaced by its translation from the page's
catalogue (:mod:`vit_edu.book.i18n`), code cells and their outputs (glued numbers, figures) copied as they are
except the words code shows a reader (widget players' controls and captions, glued phrases, the Try-it page's
labels: :mod:`vit_edu.book.output_text`), the glossary in pinyin order, and ``_config.yml`` and ``_toc.yml`` with ``language: zh_CN`` and
translated captions. The homework pages come from the built student notebooks (``book/homework/student``), which ``make book`` writes
first. A message without a translation stops the build, naming it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from pathlib import Path

import nbformat
import yaml
from pypinyin import Style, lazy_pinyin

from vit_edu.book import i18n, output_text

ROOT = i18n.ROOT
SHARED = ("_static", "_ext", "_templates", "references.bib")  # linked, not copied: the same files serve both editions
GLOSSARY = "book/glossary"
# The glossary's entries: Sphinx's :sorted: orders them by code point, which a Chinese reader cannot predict.
GLOSSARY_BLOCK = re.compile(r"```\{glossary\}\n:sorted:\n\n(?P<entries>.*?)\n```", re.S)


def pinyin_key(headword: str) -> tuple[str, str]:
    """How a Chinese dictionary files a term: by its pinyin, tones breaking ties; a Latin name by its letters
    ("logit 透镜" under L, between "lèi" and "lǜ")."""
    name = re.sub(r"[^\w\s]", "", re.split(r"\s*[（(]", headword, maxsplit=1)[0])  # “无目标”类别: 无目标类别
    plain = " ".join(lazy_pinyin(name, style=Style.NORMAL)).lower()
    return plain, " ".join(lazy_pinyin(name, style=Style.TONE3)).lower()


def pinyin_glossary(text: str) -> str:
    """The Chinese glossary page with its entries in pinyin order, one glossary per initial under a letter heading."""
    block = GLOSSARY_BLOCK.search(text)
    if block is None:
        raise SystemExit(f"{GLOSSARY}: no ```{{glossary}} block with :sorted: to put in pinyin order")
    entries = re.split(r"\n\n(?=\S)", block["entries"].strip())  # an entry: its term line, then its definition
    groups: dict[str, list[str]] = {}
    for entry in sorted(entries, key=pinyin_key):
        initial = pinyin_key(entry)[0][:1].upper()
        groups.setdefault(initial if "A" <= initial <= "Z" else "#", []).append(entry)
    letters = [f"## {letter}\n\n```{{glossary}}\n" + "\n\n".join(group) + "\n```" for letter, group in groups.items()]
    return text[:block.start()] + "\n\n".join(letters) + text[block.end():]


def translated_page(file: str, source: Path, locale_dir: Path = i18n.LOCALE) -> str:
    """A page's Chinese text (a notebook as JSON) from its English file."""
    name = i18n.page_name(file)
    table = i18n.table(name, locale_dir)
    outputs = i18n.table(i18n.BOOK_CATALOGUE, locale_dir, i18n.OUTPUT) | i18n.table(name, locale_dir, i18n.OUTPUT)
    try:
        if source.suffix == ".ipynb":
            nb = nbformat.read(source, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = i18n.translate(cell.source, table)
            output_text.translate_notebook(nb, outputs)
            return nbformat.writes(nb)
        text = output_text.translate_raw_html(i18n.translate(source.read_text(encoding="utf-8"), table), outputs)
        return pinyin_glossary(text) if file == GLOSSARY else text
    except KeyError as err:
        raise SystemExit(f"{file}: {err.args[0]}\nTranslate it: python -m vit_edu.book.i18n worksheet "
                         f"{i18n.page_name(file)} (the README says how)") from None


def english_file(file: str) -> Path:
    """The English file a page of the table of contents is built from."""
    path = i18n.page_file(ROOT / file)
    if path is None:
        raise SystemExit(f"{file}: no such page (.ipynb or .md); for the homework pages run `make homework` first")
    return path


def config(strings: dict[str, str]) -> dict:
    """The English ``_config.yml`` with the Chinese title, author and language."""
    settings = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    settings["title"], settings["author"] = strings[settings["title"]], strings[settings["author"]]
    sphinx = settings.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["language"] = "zh_CN"
    sphinx["vit_edition"] = "zh"
    sphinx["nb_code_prompt_show"], sphinx["nb_code_prompt_hide"] = "显示代码单元格", "隐藏代码单元格"
    sphinx["togglebutton_hint"], sphinx["togglebutton_hint_hide"] = "点击显示", "点击隐藏"
    return settings


def toc(strings: dict[str, str]) -> dict:
    """The English ``_toc.yml`` with the part captions translated."""
    contents = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    for part in contents["parts"]:
        part["caption"] = strings[part["caption"]]
    return contents


def write_edition(out: Path, locale_dir: Path = i18n.LOCALE) -> list[Path]:
    """Write the Chinese book's sources into ``out``; the pages written."""
    strings = i18n.table(i18n.BOOK_CATALOGUE, locale_dir)
    missing = [s for s in i18n.book_strings() if s not in strings]
    if missing:
        raise SystemExit(f"{i18n.BOOK_CATALOGUE}: untranslated title or captions {missing}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "book").mkdir(exist_ok=True)
    for name in SHARED:
        link = out / "book" / name
        if link.is_symlink() or link.exists():
            link.unlink() if link.is_symlink() or link.is_file() else shutil.rmtree(link)
        link.symlink_to(os.path.relpath(ROOT / "book" / name, link.parent))
    (out / "_config.yml").write_text(yaml.safe_dump(config(strings), allow_unicode=True, sort_keys=False), "utf-8")
    (out / "_toc.yml").write_text(yaml.safe_dump(toc(strings), allow_unicode=True, sort_keys=False), "utf-8")
    written = []
    for file in i18n.toc_files():
        source = english_file(file)
        target = out / source.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = translated_page(file, source, locale_dir)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the Chinese book's sources (for example _build/zh)")
    parser.add_argument("--locale", type=Path, default=i18n.LOCALE, help="the catalogues' folder (LC_MESSAGES)")
    args = parser.parse_args(argv)
    pages = write_edition(args.out, args.locale)
    print(f"The Chinese edition's {len(pages)} pages are in {args.out}.")


if __name__ == "__main__":
    main()
