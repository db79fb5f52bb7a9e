"""Browser test of the built site: every toc page in headless Chromium, as a reader would open it.

Needs `_build/html` (make build) and Debian's Chromium at /usr/bin/chromium. Outside CI a missing piece
skips the test; in CI (CI=true) it fails, so the check can never silently disappear.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path
from urllib.parse import urldefrag, urlparse

import pytest
import yaml

from tests.conftest import CHROMIUM, require_browser
from vit_edu.book.i18n import CJK

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def toc_pages() -> list[str]:
    """Site paths of every file in _toc.yml, root first."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        stack = list(part.get("chapters", []))
        while stack:
            entry = stack.pop(0)
            files.append(entry["file"])
            stack[0:0] = entry.get("sections", [])
    return [f"{Path(f).with_suffix('')}.html" for f in files]


def both_editions() -> list[str]:
    """Every page of the English site and its twin in the Chinese edition (under zh/)."""
    return toc_pages() + ["zh/" + p for p in toc_pages()]


@pytest.fixture(scope="module")
def server():
    site_missing = None if (SITE / "index.html").exists() else "no built site in _build/html (run make build)"
    require_browser("browser test", site_missing)
    handler = functools.partial(QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def open_page(browser, url: str):
    """Open ``url``; return the page and the problems seen while loading it."""
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url} ({r.failure})"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)

    def guard(route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith("data:") or host == "127.0.0.1":
            route.continue_()
        else:
            problems.append(f"request off the machine: {route.request.url}")
            route.abort()

    page.route("**/*", guard)
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, problems


def test_toc_lists_pages():
    pages = toc_pages()
    assert pages[0] == "book/intro.html" and "book/00_first_look.html" in pages


@pytest.mark.parametrize("path", both_editions())
def test_page_loads_cleanly(browser, server, path):
    assert (SITE / path).exists(), f"{path} was not built"
    page, problems = open_page(browser, server + path)
    try:
        heading = page.locator("main h1").first.inner_text().strip().rstrip("#").strip()
        assert heading, f"{path} has no title"
        assert heading.split()[0] in page.title(), f"{path}: title {page.title()!r} vs heading {heading!r}"
        broken = page.evaluate(
            "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))"
        )
        assert not broken, f"{path}: images that did not load: {broken}"
        tab_stops = page.evaluate(
            "async () => { if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }"
            " return document.querySelectorAll('mjx-container[tabindex]').length; }"
        )
        assert tab_stops == 0, f"{path}: {tab_stops} formulas are Tab stops (keyboard users step through each)"
        assert not problems, f"{path}: " + "\n".join(problems)
        check_internal_links(page, server, path)
    finally:
        page.close()


@functools.lru_cache(maxsize=None)
def _ids(file: Path) -> frozenset[str]:
    return frozenset(re.findall(r'\bid="([^"]+)"', file.read_text(encoding="utf-8")))


def check_internal_links(page, server: str, path: str) -> None:
    hrefs = page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    bad = []
    for href in hrefs:
        if not href.startswith(server):
            continue
        target, fragment = urldefrag(href)
        file = SITE / urlparse(target).path.lstrip("/")
        if file.is_dir():
            file = file / "index.html"
        if not file.exists():
            bad.append(href)
        elif fragment and file.suffix == ".html" and fragment not in _ids(file):
            bad.append(href)
    assert not bad, f"{path}: internal links that do not resolve: {bad}"


@pytest.mark.parametrize("path", both_editions())
def test_every_frame_player_changes_its_picture(browser, server, path):
    page, problems = open_page(browser, server + path)
    try:
        players = page.locator("div.vit-frames")
        source = (ROOT / path.removeprefix("zh/")).with_suffix(".ipynb")
        if source.exists() and re.search(r"\b(frame_player|explore)\(", source.read_text(encoding="utf-8")):
            assert players.count() > 0, f"{path}: the notebook builds a frame player but the page shows none"
        for i in range(players.count()):
            player = players.nth(i)
            image = player.locator("img.vit-frames-image")
            before, frame = image.get_attribute("src"), player.get_attribute("data-frame")
            live = player.locator(".vit-frames-live")
            assert live.get_attribute("aria-live") == "polite", f"{path}: player {i} has no polite status region"
            live.evaluate("e => { e.dataset.changes = '0'; new MutationObserver(() => { e.dataset.changes ="
                          " String(Number(e.dataset.changes) + 1); }).observe(e, {childList: true, subtree: true,"
                          " characterData: true}); }")
            control = player.locator("[data-control]").first
            if control.evaluate("e => e.tagName") == "SELECT":
                count = control.locator("option").count()
                current = int(control.input_value())
                control.select_option(str((current + 1) % count))
            else:
                top, current = int(control.get_attribute("max")), int(control.input_value())
                control.fill(str(top if current != top else 0))
            assert player.get_attribute("data-frame") != frame, f"{path}: player {i} did not switch frame"
            assert image.get_attribute("src") != before, f"{path}: player {i} shows the same picture"
            # A burst of moves (a held arrow key) is announced once, after the pause, with the new caption.
            control.evaluate("e => { for (let k = 0; k < 5; k++) e.dispatchEvent(new Event('input', {bubbles: true})); }")
            page.wait_for_timeout(1200)
            caption = player.locator(".vit-frames-caption").text_content().strip()
            said = " ".join(live.text_content().split())
            assert said and said == " ".join((caption or image.get_attribute("alt")).split()), (path, i, said)
            assert live.get_attribute("data-changes") == "1", f"{path}: player {i} announced {live.get_attribute('data-changes')} times"
            if control.evaluate("e => e.tagName") == "INPUT":
                # A screen reader hears the value the reader sees, not the slider's index.
                shown = player.locator("output").first.inner_text()
                assert control.get_attribute("aria-valuetext") == shown, f"{path}: player {i} aria-valuetext"
            label = control.evaluate("e => e.getAttribute('aria-label')")
            assert label and "_" not in label, f"{path}: player {i} control label {label!r} is an identifier"
            assert player.locator(".vit-frames-note").count() == 0, f"{path}: player {i} kept its no-script note"
            if path.startswith("zh/"):  # the Chinese edition's players speak Chinese
                caption = player.locator(".vit-frames-caption").inner_text()
                assert CJK.search(caption), f"{path}: player {i} caption is not Chinese: {caption[:100]!r}"
        assert not problems, "\n".join(problems)
    finally:
        page.close()


# 320 px: WCAG 2.1's reflow width (1.4.10), as a 1280-px window zoomed to 400%.
@pytest.mark.parametrize(("path", "width"), [(p, w) for p in toc_pages() for w in (1366, 390, 320)]
                         + [("zh/" + p, w) for p in toc_pages() for w in (390, 320)])
def test_no_sideways_scrolling(browser, server, path, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(server + path, wait_until="load")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 1:
            culprits = page.evaluate(
                """() => Array.from(document.querySelectorAll('main *')).filter(e => {
                     const r = e.getBoundingClientRect(); return r.right > window.innerWidth + 1 && r.width > 0;
                   }).slice(0, 5).map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 60))"""
            )
            pytest.fail(f"{path} at {width} px is {overflow} px too wide: {culprits}")
    finally:
        page.close()


@pytest.mark.parametrize("query", ["位置编码", "注意力", "rollout"])
def test_search_finds_chinese_and_english_terms(browser, server, query):
    page, problems = open_page(browser, server + f"search.html?q={query}")
    try:
        page.wait_for_function("document.querySelectorAll('#search-results li').length > 0", timeout=15000)
        titles = page.locator("#search-results li").all_inner_texts()
        assert titles, f"no result for {query!r}"
        assert not problems, "\n".join(problems)
    finally:
        page.close()


@pytest.mark.parametrize("path", ["book/05_qkv.html", "book/homework/student/hw1_tokens.html"])
def test_language_switch_goes_to_the_same_page_both_ways(browser, server, path):
    page, problems = open_page(browser, server + path)
    try:
        page.locator("nav.vit-lang-switch a").click()
        page.wait_for_load_state("load")
        assert page.url == server + "zh/" + path and page.evaluate("document.documentElement.lang") == "zh-CN"
        assert re.search(r"[\u3400-\u9fff]", page.locator("main h1").first.inner_text())
        page.locator("nav.vit-lang-switch a").click()
        page.wait_for_load_state("load")
        assert page.url == server + path and page.evaluate("document.documentElement.lang") == "en"
        assert not problems, "\n".join(problems)
    finally:
        page.close()


def test_chinese_search_finds_a_chinese_word_on_a_chinese_page(browser, server):
    page, problems = open_page(browser, server + "zh/search.html?q=位置编码")
    try:
        page.wait_for_function("document.querySelectorAll('#search-results li').length > 0", timeout=15000)
        links = page.locator("#search-results li a").evaluate_all("as => as.map(a => a.href)")
        assert any("/zh/book/04_cls_and_position.html" in h for h in links), links
        assert not problems, "\n".join(problems)
    finally:
        page.close()


def test_chinese_is_drawn_with_the_served_font(browser, server):
    """This machine has no CJK font (Debian's Chromium alone draws boxes): the glyphs must come from the site's."""
    assert (SITE / "zh/_static/vit-cjk.woff2").exists(), "no CJK web font in the build (make build cuts it)"
    page, problems = open_page(browser, server + "zh/book/05_qkv.html")
    try:
        page.evaluate("document.fonts.ready.then(() => true)")
        session = page.context.new_cdp_session(page)
        session.send("DOM.enable")
        session.send("CSS.enable")
        root = session.send("DOM.getDocument")["root"]["nodeId"]
        node = session.send("DOM.querySelector", {"nodeId": root, "selector": "main section p"})["nodeId"]
        fonts = session.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        chinese = [f for f in fonts if "CJK" in f["familyName"] or f.get("isCustomFont")]
        assert chinese and all(f["isCustomFont"] for f in chinese), fonts
        assert not problems, "\n".join(problems)
    finally:
        page.close()


def test_no_hidden_homework_value_on_the_site():
    """The site (pages, their sources, downloads) holds the student notebooks only: no hidden input, no key."""
    from hidden_values import leaks

    names = sorted(p.stem for p in (ROOT / "book" / "homework").glob("hw*.ipynb"))
    files = [p for p in SITE.rglob("*") if p.is_file() and p.suffix in (".html", ".ipynb", ".md", ".txt", ".json",
                                                                          ".py") and "_static" not in p.parts]
    assert any("hw1_tokens" in p.name for p in files), "the homework pages are on the site"
    for path in files:
        found = leaks(path.read_text(errors="replace"), names)
        assert not found, f"{path.relative_to(SITE)} holds hidden values {found}"
    assert not list(SITE.rglob("hidden_*")) and not list(SITE.rglob("*_key.json"))


# The themes' English (or Traditional Chinese) that the Chinese edition's frame must not show.
FRAME_ENGLISH = ["Link to this heading", "Link to this term", "Toggle primary sidebar", "Toggle secondary sidebar",
                 '"Color mode"', "System Settings", "Toggle hidden content", "The ViT, hands-on authors",
                 "© Copyright", "列印"]


@pytest.mark.parametrize("path", toc_pages())
def test_the_chinese_page_frame_is_chinese(server, path):
    html = (SITE / "zh" / path).read_text(encoding="utf-8")
    assert not [s for s in FRAME_ENGLISH if s in html]
    assert "动手学 ViT 作者团队" in html and "版权所有" in html


@pytest.mark.parametrize("path", toc_pages())
def test_chinese_glossary_links_sit_on_glossed_whole_words(server, path):
    """A Chinese name links where the page glosses it (位置编码（position embedding）), so 关键 or 像素值 never link
    their 键 or 值 (the whole-word rule is tested in tests/test_glossary_links.py)."""
    html = (SITE / "zh" / path).read_text(encoding="utf-8")
    links = re.findall(r'(.)<a class="[^"]*glossary-link[^"]*"[^>]*>([^<]*)</a>(.)', html)
    chinese = [(before, word, after) for before, word, after in links if CJK.search(word)]
    assert all(after == "（" for _, _, after in chinese), [c for c in chinese if c[2] != "（"]


@pytest.mark.parametrize("path", both_editions())
def test_no_picture_is_described_by_its_file_name(server, path):
    """A figure's alt text says what it shows; a file path (myst-nb's default) tells a screen reader nothing."""
    html = (SITE / path).read_text(encoding="utf-8")
    alts = re.findall(r'<img\b[^>]*\balt="([^"]*)"', html)
    bad = [a for a in alts if re.search(r"\.(?:png|svg|jpe?g|gif)\b|_images/", a) or (a and " " not in a.strip()
                                                                                        and not CJK.search(a))]
    assert not bad, f"{len(bad)} picture(s) described by a file name: {bad[:3]}"


AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"  # npm ci (make build) installs it from package-lock.json
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


def axe_violations(page) -> list[tuple[str, str, str]]:
    """(rule, impact, CSS path) of every node axe-core finds against WCAG 2.1 A/AA and best practice."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", AXE_TAGS)
    return [(v["id"], v["impact"], " ".join(map(str, n["target"]))) for v in result["violations"] for n in v["nodes"]]


@pytest.mark.parametrize("path", both_editions())
def test_axe_finds_no_violation(browser, server, path):
    """WCAG 2.1 A/AA and axe's best practice, the theme's chrome included: what the theme and docutils got wrong
    the book mends (book/_templates, site_fixes._BODY_FIXES), so nothing is left to excuse."""
    assert AXE.exists(), "no axe-core: run make build (npm ci installs it)"
    page, _ = open_page(browser, server + path)
    try:
        found = axe_violations(page)
        assert not found, f"{path}: {len(found)} axe-core violation(s):\n" + "\n".join(map(str, found))
    finally:
        page.close()


@pytest.mark.parametrize("path", both_editions())
def test_words_in_the_other_language_carry_their_lang(server, path):
    """Chinese on an English page, and a gloss's English on a Chinese page, are read in their own language."""
    html = (SITE / path).read_text(encoding="utf-8")
    body = html[html.index("<body"):]
    text = re.sub(r"<(script|style|pre|code|option|textarea|title)\b.*?</\1>", " ", body, flags=re.S)
    if path.startswith("zh/"):
        text = re.sub(r'="[^"]*"', '=""', text)  # attribute values (an alt text) aside
        # A marked gloss reads （<span lang="en">…</span>）: a bare one has its English right after the bracket.
        bare = re.findall(r"（([A-Za-z][^（）<>\u3000-\u303f\u3400-\u9fff\uff00-\uffef]*)）", text)
        assert not bare, f"{path}: English glosses without lang: {bare[:5]}"
    else:
        text = re.sub(r'<(span|a)\b[^>]*\blang="zh-CN"[^>]*>.*?</\1>', " ", text, flags=re.S)
        bare = re.findall(r"[\u3400-\u9fff]+", re.sub(r"<[^>]+>", " ", text))
        assert not bare, f"{path}: Chinese without lang: {bare[:5]}"
