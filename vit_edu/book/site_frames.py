"""The players' frames as files of the website, shared by both editions and fetched when first shown.

A player (:mod:`vit_edu.widgets.frames`) carries every frame inline as base64 PNG, so that a notebook shows it
anywhere; on the website that made a chapter page weigh megabytes, and the Chinese edition repeated them.
``python -m vit_edu.book.site_frames --site _build/html`` (run by ``make book`` once the editions are built)
writes each distinct frame once, as ``frames/<content hash>.png``, and rewrites every page's players to name
them: the data gets a ``base`` (the relative way from the page to ``frames/``) and file names in place of base64,
and the first picture becomes a lazy ``<img>`` of known size (boxed, if wide, to stay legible on a phone:
:mod:`vit_edu.book.wide_figures`). The player's own script then fetches a frame when
it is shown. A page already rewritten is left as it is; frames that no page names any more are removed.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from vit_edu.book.wide_figures import wide_box
from vit_edu.widgets.frames import frame_index, png_size

FRAMES = "frames"  # the folder under the site's root
FRAME_NAME = re.compile(r"[0-9a-f]{16}\.png")
# One player: its opening tag, everything up to its data, the data, and the data's closing tag (frames.py's HTML).
PLAYER = re.compile(r'<div class="vit-frames" id="(?P<id>[^"]+)">(?P<body>.*?<script type="application/json" '
                    r'class="vit-frames-data">)(?P<data>.*?)</script>', re.S)
IMAGE = re.compile(r'<img class="vit-frames-image"(?P<attrs>[^>]*)>')
INLINE_SRC = re.compile(r' src="data:image/png;base64,[^"]*"')


@dataclass
class Report:
    """What one pass over the site did."""

    pages: int = 0  # pages rewritten now
    unchanged: int = 0  # pages with players rewritten before
    html_before: int = 0  # bytes of the rewritten pages, before and after
    html_after: int = 0
    written: int = 0  # frame files written now
    removed: int = 0  # frame files no page names any more
    frames: int = 0  # frame files the site's pages name, and their bytes
    frame_bytes: int = 0


def frame_name(png: bytes) -> str:
    """The file name of a frame: its content hash, so equal frames (the two editions') share one file."""
    return hashlib.sha256(png).hexdigest()[:16] + ".png"


def _decode(text: str, where: str) -> bytes:
    """The PNG a frame's base64 holds; ``where`` names the player in the error if it holds none."""
    try:
        png = base64.b64decode(text, validate=True)
        png_size(png)
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"{where}: a frame is not a base64 PNG ({err}): {text[:40]!r}...") from None
    return png


def _player(m: re.Match, page: Path, base: str, frames_dir: Path, names: set[str], report: Report) -> str:
    """One player's HTML with its frames as files in ``frames_dir`` (written if new), named from ``base``."""
    where = f"{page}: player {m['id']}"
    try:
        data = json.loads(m["data"])  # its "<\/" is JSON's escape of "</"
        frames, first = data["frames"], frame_index(data["sizes"], data["start"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{where}: its data is not a player's ({type(err).__name__}: {err})") from None
    if not 0 <= first < len(frames):
        raise ValueError(f"{where}: its first frame, {first}, is not among its {len(frames)} frames")
    if "base" in data:  # rewritten before: its files must still be there
        missing = [name for name, _ in frames if not (frames_dir / name).is_file()]
        if missing:
            raise ValueError(f"{where}: names frames that are not in {frames_dir}: {missing[:3]} (rebuild the site)")
        names.update(name for name, _ in frames)
        return m[0]
    image = IMAGE.search(m["body"])
    if image is None or not INLINE_SRC.search(image["attrs"]):
        raise ValueError(f"{where}: no <img class=\"vit-frames-image\"> with an inline picture")
    for frame in frames:
        png = _decode(frame[0], where)
        frame[0] = frame_name(png)
        if not (frames_dir / frame[0]).exists():
            (frames_dir / frame[0]).write_bytes(png)
            report.written += 1
        names.add(frame[0])
    data["base"] = base
    width, height = png_size((frames_dir / frames[first][0]).read_bytes())
    attrs = INLINE_SRC.sub(f' src="{base}{frames[first][0]}" loading="lazy" width="{width}" height="{height}"',
                           image["attrs"], count=1)
    boxed = wide_box(f'<img class="vit-frames-image"{attrs}>', width)  # legible on a phone
    body = m["body"][:image.start()] + boxed + m["body"][image.end():]
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return f'<div class="vit-frames" id="{m["id"]}">{body}{payload}</script>'


def rewrite_page(page: Path, site: Path, report: Report) -> set[str]:
    """Rewrites ``page``'s players to fetch their frames from the site's ``frames/``; the frame names it uses."""
    text = page.read_text(encoding="utf-8")
    count = text.count('class="vit-frames-data"')
    if not count:
        return set()
    players = PLAYER.findall(text)
    if len(players) != count:
        raise ValueError(f"{page}: {count} player data blocks, but {len(players)} whole players "
                         '(<div class="vit-frames" id=...> ... <script class="vit-frames-data">)')
    frames_dir = site / FRAMES
    frames_dir.mkdir(exist_ok=True)
    base = Path(os.path.relpath(frames_dir, page.parent)).as_posix() + "/"
    names: set[str] = set()
    new = PLAYER.sub(lambda m: _player(m, page, base, frames_dir, names, report), text)
    if new == text:
        report.unchanged += 1
    else:
        report.pages += 1
        report.html_before += len(text.encode("utf-8"))
        report.html_after += len(new.encode("utf-8"))
        page.write_text(new, encoding="utf-8")
    return names


def rewrite_site(site: Path) -> Report:
    """Every page of ``site`` (both editions) with its players' frames as shared files; stale frames removed."""
    if not ((site / "index.html").exists() or (site / "zh" / "index.html").exists()):  # make book LANG=zh: zh/ only
        raise ValueError(f"{site} is not a built site (no index.html, nor zh/index.html)")
    report, names = Report(), set()
    for page in sorted(site.rglob("*.html")):
        if "_static" not in page.relative_to(site).parts:
            names |= rewrite_page(page, site, report)
    frames_dir = site / FRAMES
    for file in sorted(frames_dir.glob("*.png")) if frames_dir.is_dir() else []:
        if FRAME_NAME.fullmatch(file.name) and file.name not in names:
            file.unlink()
            report.removed += 1
    report.frames = len(names)
    report.frame_bytes = sum((frames_dir / name).stat().st_size for name in names)
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=Path("_build/html"), help="the built site (both editions)")
    args = parser.parse_args(argv)
    try:
        r = rewrite_site(args.site)
    except ValueError as err:
        raise SystemExit(f"site_frames: {err}") from None
    print(f"Players' frames: {r.pages} page(s) rewritten ({r.html_before / 1e6:.1f} MB -> {r.html_after / 1e6:.1f} MB"
          f" of HTML), {r.unchanged} already were; {r.frames} frame files ({r.frame_bytes / 1e6:.1f} MB) in "
          f"{args.site / FRAMES}, {r.written} new, {r.removed} removed.")


if __name__ == "__main__":
    main()
