"""Benchmark of the site's weight (a script, not a test): the bytes each page type transfers on load, both editions.

    .venv/bin/python tests/bench_site.py [--site DIR] [--top 8] [--json out.json] [--pages book/05_qkv.html ...]

The site is served by a plain http.server (no compression, so bytes transferred = file sizes) and each page is
opened in headless Chromium in a fresh context (empty cache), scrolled to the bottom so lazy content loads, then
left until the network is idle. Every response is counted, split by kind; the largest files follow, and the files
every measured page loads (page-wide weight). --json writes the raw measurements for before/after comparisons.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # test_site, tests
from test_site import CHROMIUM, CHROMIUM_ARGS, SITE, QuietHandler  # noqa: E402

# Page type -> the English page measuring it; the Chinese edition's twin is the same path under zh/.
PAGE_TYPES = {
    "home": "book/intro.html",
    "chapter, players": "book/01_patches.html",
    "chapter, formulas, no player": "book/03_patch_embedding.html",
    "chapter, no formula": "book/00_first_look.html",
    "glossary": "book/glossary.html",
    "Try-it": "book/try_it.html",
    "search": "search.html",
}
KINDS = ("HTML", "JS", "CSS", "fonts", "images", "frames", "other")
EXTENSIONS = {".html": "HTML", ".js": "JS", ".mjs": "JS", ".css": "CSS", ".woff2": "fonts", ".woff": "fonts",
              ".ttf": "fonts", ".otf": "fonts", ".eot": "fonts", ".png": "images", ".svg": "images",
              ".jpg": "images", ".jpeg": "images", ".gif": "images", ".webp": "images", ".ico": "images"}


def kind_of(path: str) -> str:
    """The kind of a site path: players' frame files (under a frames/ folder) first, then by extension."""
    if "/frames/" in f"/{path}":
        return "frames"
    return EXTENSIONS.get(Path(path).suffix.lower(), "other")


def measure(browser, base: str, path: str) -> dict:
    """Open ``base + path`` in a fresh context; return its responses [(site path, bytes, kind)] and any problems."""
    context = browser.new_context()
    page = context.new_page()
    requests, problems = [], []
    context.on("requestfinished", lambda r: requests.append(r))
    context.on("requestfailed", lambda r: problems.append(f"failed: {r.url} ({r.failure})"))

    def guard(route):  # the site must be whole: anything from off the machine is a problem, and not fetched
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            problems.append(f"off the machine: {route.request.url}")
            route.abort()

    context.route("**/*", guard)
    page.goto(base + path, wait_until="load")
    # Step down the page a screen at a time, so lazily loaded pictures and frames are requested as a reader would.
    height = page.evaluate("document.documentElement.scrollHeight")
    for y in range(0, height + 1, 600):
        page.evaluate(f"window.scrollTo(0, {y})")
        page.wait_for_timeout(20)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)
    page.wait_for_load_state("networkidle")
    files = []
    for request in requests:
        if request.url.startswith("data:"):
            continue
        response = request.response()
        if response is not None and response.status >= 400:
            problems.append(f"HTTP {response.status}: {request.url}")
        size = request.sizes()["responseBodySize"]
        site_path = urlparse(request.url).path.lstrip("/")
        files.append((site_path, size, kind_of(site_path)))
    context.close()
    return {"path": path, "files": files, "problems": problems}


def by_kind(files: list) -> dict[str, int]:
    totals = Counter({kind: 0 for kind in KINDS})
    for _, size, kind in files:
        totals[kind] += size
    return dict(totals)


def kb(n: int) -> str:
    return f"{n / 1000:,.1f}"


def print_table(title: str, results: list[tuple[str, dict]]) -> None:
    """One row per page type: kB per kind, the total and the number of requests."""
    print(f"\n{title} (kB = 1000 bytes transferred on load; no compression)")
    head = f"{'page type':<30}" + "".join(f"{k:>10}" for k in KINDS) + f"{'total':>11}{'requests':>10}"
    print(head)
    print("-" * len(head))
    for label, result in results:
        kinds = by_kind(result["files"])
        total = sum(kinds.values())
        print(f"{label:<30}" + "".join(f"{kb(kinds[k]):>10}" for k in KINDS) + f"{kb(total):>11}"
              f"{len(result['files']):>10}")


def print_largest(results: list[tuple[str, dict]], top: int) -> None:
    """Each page's largest files, then the files every measured page loads (what the whole site carries)."""
    print(f"\nLargest files per page (top {top}, kB)")
    for label, result in results:
        print(f"  {result['path']} ({label})")
        for path, size, kind in sorted(result["files"], key=lambda f: -f[1])[:top]:
            print(f"    {kb(size):>10}  {kind:<7} {path}")
    # A file counts as page-wide when every page of its edition loads it (the zh/ prefix stripped).
    editions: dict[str, list[dict]] = {}
    for _, result in results:
        editions.setdefault("zh" if result["path"].startswith("zh/") else "en", []).append(result)
    for edition, pages in editions.items():
        seen = Counter()
        sizes: dict[str, int] = {}
        for result in pages:
            for path, size in {p: s for p, s, _ in result["files"]}.items():
                seen[path] += 1
                sizes[path] = size
        common = sorted((p for p, n in seen.items() if n == len(pages)), key=lambda p: -sizes[p])
        total = sum(sizes[p] for p in common)
        print(f"\nLoaded by every measured {edition} page: {len(common)} files, {kb(total)} kB")
        for path in common[:top]:
            print(f"    {kb(sizes[path]):>10}  {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="a built site (default: _build/html)")
    parser.add_argument("--top", type=int, default=8, help="how many of the largest files to list per page")
    parser.add_argument("--pages", nargs="+", metavar="PATH",
                        help="English site paths to measure instead of the page types (each also under zh/)")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args()
    site = args.site.resolve()
    pages = {p: p for p in args.pages} if args.pages else PAGE_TYPES
    missing = [p for p in pages.values() for p in (p, f"zh/{p}") if not (site / p).exists()]
    if missing:
        raise SystemExit(f"{site} lacks {', '.join(missing)}: build the site first (make build)")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    measured: dict[str, list[tuple[str, dict]]] = {"English": [], "Chinese": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for label, path in pages.items():
            measured["English"].append((label, measure(browser, base, path)))
            measured["Chinese"].append((label, measure(browser, base, f"zh/{path}")))
        browser.close()
    httpd.shutdown()
    print(f"Site: {site}")
    for edition, results in measured.items():
        print_table(f"{edition} edition", results)
    print_largest(measured["English"] + measured["Chinese"], args.top)
    problems = [f"{r['path']}: {x}" for results in measured.values() for _, r in results for x in r["problems"]]
    if problems:
        print("\nProblems while loading:\n  " + "\n  ".join(problems))
    if args.json:
        args.json.write_text(json.dumps({"site": str(site), "pages": measured}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
