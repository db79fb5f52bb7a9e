"""Browser test of the built site: every toc page in headless Chromium, as a reader would open it.

Needs `_build/html` (make build) and Debian's Chromium at /usr/bin/chromium. Outside CI a missing piece
skips the test; in CI (CI=true) it fails, so the check can never silently disappear.
"""

from __future__ import annotations

import functools
import http.server
import json
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


def open_page(browser, url: str, requested: list[str] | None = None):
    """Open ``url``; return the page and the problems seen while loading it (the URLs it requests: ``requested``)."""
    page = browser.new_page()
    problems: list[str] = []
    if requested is not None:
        page.on("request", lambda r: requested.append(r.url))
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
        page.evaluate(LOAD_LAZY_IMAGES)
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


# Lazy pictures (the players' first frames) load when a reader scrolls to them: scroll to each and wait for it.
LOAD_LAZY_IMAGES = """async () => {
  for (const image of document.querySelectorAll('img[loading=lazy]')) {
    image.scrollIntoView();
    await new Promise(done => { if (image.complete) { done(); } else { image.onload = image.onerror = done;
      setTimeout(done, 5000); } });
  }
}"""


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


PLAYER_DATA = re.compile(r'class="vit-frames-data">(.*?)</script>', re.S)


@pytest.mark.parametrize("path", toc_pages())
def test_players_frames_are_files_both_editions_share(server, path):
    """No built page inlines a frame (vit_edu.book.site_frames moved them into frames/); a Chinese page's players
    name the very files its English twin's do."""
    files = {}
    for page in (SITE / path, SITE / "zh" / path):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"data:image/png;base64,iVBOR", text), f"{page}: a frame inlined as base64"
        players = [json.loads(m) for m in PLAYER_DATA.findall(text)]
        files[page] = [(page.parent / (p["base"] + name)).resolve() for p in players for name, _ in p["frames"]]
        missing = [f for f in files[page] if not f.is_file()]
        assert not missing, f"{page}: frames not in the site: {missing[:3]}"
    assert files[SITE / path] == files[SITE / "zh" / path], f"{path}: the editions' players name different frames"


# A player's frame files, resolved: [frame index -> URL] per player, and the frame each shows now.
PLAYER_FRAMES = """() => Array.from(document.querySelectorAll('div.vit-frames'), p => {
  const data = JSON.parse(p.querySelector('script.vit-frames-data').textContent);
  return {urls: data.frames.map(f => new URL(data.base + f[0], location.href).href), shown: Number(p.dataset.frame)};
})"""


@pytest.mark.parametrize("path", both_editions())
def test_every_frame_player_changes_its_picture(browser, server, path):
    fetched: list[str] = []  # the URLs the page requests, in order
    page, problems = open_page(browser, server + path, requested=fetched)
    try:
        players = page.locator("div.vit-frames")
        source = (ROOT / path.removeprefix("zh/")).with_suffix(".ipynb")
        if source.exists() and re.search(r"\b(frame_player|explore)\(", source.read_text(encoding="utf-8")):
            assert players.count() > 0, f"{path}: the notebook builds a frame player but the page shows none"
        frames = page.evaluate(PLAYER_FRAMES)
        firsts = {p["urls"][p["shown"]] for p in frames}
        loaded = {url for url in fetched if "/frames/" in url}
        assert loaded <= firsts, f"{path}: loading fetched frames no player shows: {loaded - firsts}"
        for i in range(players.count()):
            player = players.nth(i)
            image = player.locator("img.vit-frames-image")
            image.scroll_into_view_if_needed()  # the first frame is lazy: let it load before the move
            page.wait_for_function("i => i.complete", arg=image.element_handle())
            before, frame = image.get_attribute("src"), player.get_attribute("data-frame")
            seen = len(fetched)
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
            page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=image.element_handle())
            shown = frames[i]["urls"][int(player.get_attribute("data-frame"))]
            # The move fetches the frame now shown (unless the page had it), no other; the scroll to the player may
            # have brought a next player's first frame into view.
            new = [url for url in fetched[seen:] if "/frames/" in url and (url == shown or url not in firsts)]
            assert new == [shown] or (not new and shown in fetched[:seen]), f"{path}: player {i} move fetched {new}"
            # A burst of moves (a held arrow key) is announced once, after the pause, with the new caption. Counted
            # from after the move above has been announced (its picture's fetch may outlast the pause).
            page.wait_for_timeout(700)
            live.evaluate("e => { e.dataset.changes = '0'; }")
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
def test_the_chinese_page_frame_stays_chinese_once_its_scripts_run(browser, server, path):
    """What the page's scripts add (sphinx-togglebutton's buttons and their hints, the players' controls) is named
    and labelled in Chinese too."""
    page, _ = open_page(browser, server + "zh/" + path)
    try:
        shown = page.evaluate("""() => [document.body.innerText].concat(
            Array.from(document.querySelectorAll('[aria-label], [title], [data-toggle-hint]'), e =>
              [e.getAttribute('aria-label'), e.getAttribute('title'), e.dataset.toggleHint].join(' ')))""")
        english = [s for s in FRAME_ENGLISH + ["Click to show", "Click to hide"] if any(s in text for text in shown)]
        assert not english, f"zh/{path}: {english}"
    finally:
        page.close()


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


# Every control reached by Tab, focused as the keyboard focuses it: the indicator it shows (an outline of 2 px or
# more whose colour stands 3:1 against what surrounds it, the browser's own two-tone ring, or a box shadow the focus
# adds). The background is the nearest ancestor's opaque one, which the outline (drawn outside the box) sits on.
FOCUS_INDICATORS = """() => {
  const controls = 'a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])';
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = c => c.slice(0, 3).map(v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + [0.2126, 0.7152, 0.0722][i] * v, 0);
  const ratio = (a, b) => (Math.max(lum(a), lum(b)) + 0.05) / (Math.min(lum(a), lum(b)) + 0.05);
  function background(el) {
    for (let e = el.parentElement; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0.5) return c;
    }
    return [255, 255, 255];
  }
  const missing = [];
  for (const el of document.querySelectorAll(controls)) {
    if (el.disabled || !el.checkVisibility({visibilityProperty: true})) continue;
    const shadow = getComputedStyle(el).boxShadow;
    el.focus();
    if (document.activeElement !== el) continue;
    const s = getComputedStyle(el), width = parseFloat(s.outlineWidth);
    const shown = s.outlineStyle === 'auto' || (s.boxShadow !== 'none' && s.boxShadow !== shadow) ||
      (s.outlineStyle !== 'none' && width >= 2 && ratio(rgb(s.outlineColor), background(el)) >= 3);
    if (!shown) {
      const name = (el.getAttribute('aria-label') || el.textContent || el.name || '').trim().slice(0, 40);
      missing.push(`${el.tagName.toLowerCase()}.${String(el.className).split(' ')[0]} "${name}": outline ` +
        `${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}`);
    }
    el.blur();
  }
  return missing;
}"""


@pytest.mark.parametrize("path", both_editions())
def test_every_control_shows_where_the_focus_is(browser, server, path):
    """WCAG 2.4.7 with 1.4.11's 3:1, in the light and the dark colour scheme: a keyboard user sees which control
    has the focus, the theme's buttons, the code toggles and the players' controls included."""
    page, _ = open_page(browser, server + path)
    try:
        page.keyboard.press("Tab")  # focus from the keyboard, so that focusing by script shows :focus-visible too
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            missing = page.evaluate(FOCUS_INDICATORS)
            assert not missing, f"{path} ({scheme}): no visible focus on\n" + "\n".join(missing)
    finally:
        page.close()


# Weight: a page loads what it shows and no more (issue 35). MathJax where the page has a formula; FontAwesome's
# script nowhere (the icons are the theme's icon font, cut to the glyphs the site shows); on an English page, the
# English edition's CJK font (the glosses' characters), never the Chinese edition's.
MATH = 'class="math notranslate'
ENGLISH_FONT_LIMIT = 120_000  # bytes: the English glosses' characters (some 330) fit in about 90 KB


@pytest.mark.parametrize("path", both_editions() + ["search.html", "zh/search.html"])
def test_a_page_loads_only_what_it_uses(browser, server, path):
    requested: list[str] = []
    page, problems = open_page(browser, server + path, requested)
    try:
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_load_state("networkidle")
        files = [urlparse(u).path for u in requested if not u.startswith("data:")]
        has_math = MATH in (SITE / path).read_text(encoding="utf-8")
        mathjax = [f for f in files if "/mathjax/" in f]
        assert bool(mathjax) == has_math, f"{path}: {'no formula but' if mathjax else 'formulas but no'} MathJax"
        assert not [f for f in files if "fontawesome.js" in f], f"{path} loads FontAwesome's script"
        if "search.html" not in path:
            assert not [f for f in files if f.endswith("searchindex.js")], f"{path} loads the search index"
        fonts = {f: (SITE / f.lstrip("/")).stat().st_size for f in files if f.endswith((".woff2", ".woff", ".ttf"))}
        if not path.startswith("zh/"):
            assert not [f for f in fonts if f.startswith("/zh/")], f"{path} fetches the Chinese edition's font"
            assert all(size <= ENGLISH_FONT_LIMIT for size in fonts.values()), f"{path}: fonts {fonts}"
        icon_font = {f: s for f, s in fonts.items() if "fontawesome" in f}
        assert all(size < 20_000 for size in icon_font.values()), f"{path}: the whole icon font {icon_font}"
        assert not problems, "\n".join(problems)
    finally:
        page.close()


ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"\\([0-9a-f]+)"\}')


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_the_icon_font_has_every_icon_the_pages_show(edition):
    """Each icon class on a page (and each icon the theme's stylesheets draw) has its glyph in the cut icon font."""
    from fontTools.ttLib import TTFont

    static = SITE / edition / "_static"
    css = (static / "styles/pydata-sphinx-theme.css").read_text(encoding="utf-8")
    glyphs = {name[1:-7]: int(code, 16) for names, code in ICON_RULE.findall(css) for name in names.split(",")}
    cmap = TTFont(static / "vendor/fontawesome/webfonts/fa-solid-900.woff2").getBestCmap()
    pages = [SITE / edition / p for p in toc_pages() + ["search.html"]]
    tags = re.compile(r'<(?:i|span)\s[^>]*\bclass="([^"]*)"')
    shown = {name for p in pages for attr in tags.findall(p.read_text(encoding="utf-8"))
             for name in re.findall(r"\bfa-[a-z0-9-]+", attr)}
    icons = {c for c in shown if not re.fullmatch(r"fa-(solid|regular|brands|lg|sm|xs|fw|\dx|spin)", c)}  # not styles
    assert {"fa-bars", "fa-magnifying-glass", "fa-download"} <= icons, sorted(icons)  # the pages show these
    missing = sorted(c for c in icons if c not in glyphs or glyphs[c] not in cmap)
    assert not missing, f"icons without a glyph in {edition or 'the English'} site's icon font: {missing}"
    admonition = re.search(r'--pst-icon-info-circle:"(.)"', css)
    assert admonition and ord(admonition.group(1)) in cmap, "the note admonition's icon is not in the font"
    github = re.search(r'--pst-icon-github:"(.)"', css)  # before each link to GitHub (the references)
    brands = TTFont(static / "vendor/fontawesome/webfonts/fa-brands-400.woff2").getBestCmap()
    assert github and ord(github.group(1)) in brands and len(brands) < 10, "the brands font is not cut to GitHub's logo"


ICON_CONTROLS = """async () => {
  await document.fonts.ready;
  const drawn = (ch, font) => { const c = document.createElement('canvas'); c.width = c.height = 48;
    const g = c.getContext('2d'); g.font = font; g.fillText(ch, 4, 40); return c.toDataURL(); };
  const out = [];
  for (const i of document.querySelectorAll('i[class], span[class]')) {
    if (!/\\bfa-[a-z]/.test(i.className) || !i.checkVisibility({visibilityProperty: true})) continue;
    const control = i.closest('button, a, label, [role="button"]');
    const box = i.getBoundingClientRect();
    const ch = getComputedStyle(i, '::before').content.replace(/"/g, '');
    await document.fonts.load('900 40px "Font Awesome 6 Free"', ch);
    const glyph = drawn(ch, '900 40px "Font Awesome 6 Free"') !== drawn(ch, '900 40px serif');
    const named = control && ((control.getAttribute('aria-label') || '').trim() || (control.title || '').trim() ||
      control.innerText.trim() || (control.getAttribute('aria-labelledby') &&
      document.getElementById(control.getAttribute('aria-labelledby'))?.innerText.trim()));
    out.push({icon: i.className, width: box.width, height: box.height, glyph, hidden: i.getAttribute('aria-hidden'),
              named: control ? Boolean(named) : null});
  }
  return out;
}"""


@pytest.mark.parametrize("path", ["book/intro.html", "book/01_patches.html", "zh/book/03_patch_embedding.html",
                                  "search.html"])
@pytest.mark.parametrize("width", [1366, 390])
def test_every_icon_is_drawn_and_its_control_named(browser, server, path, width):
    """An icon-only control still shows its icon (a glyph of the icon font in a box that is not empty), hidden from
    screen readers, and its control has a name."""
    page, problems = open_page(browser, server + path)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        icons = page.evaluate(ICON_CONTROLS)
        assert len(icons) >= 3, f"{path} at {width} px shows {len(icons)} icons"
        bad = [i for i in icons if not (i["width"] > 0 and i["height"] > 0 and i["glyph"] and i["hidden"] == "true"
                                        and i["named"] is not False)]
        assert not bad, f"{path} at {width} px: icons not drawn, not hidden or in a control without a name: {bad}"
        assert not problems, "\n".join(problems)
    finally:
        page.close()


def test_each_edition_has_a_cjk_font_with_its_own_characters():
    """The English site's font holds the Chinese its pages show and is a fraction of the Chinese edition's."""
    from fontTools.ttLib import TTFont

    from vit_edu.book.cjk_font import is_cjk

    for edition in ("", "zh/"):
        cmap = TTFont(SITE / edition / "_static/vit-cjk.woff2").getBestCmap()
        pages = [SITE / edition / p for p in toc_pages()]
        used = {ch for p in pages for ch in p.read_text(encoding="utf-8") if is_cjk(ch)}
        assert not [ch for ch in used if ord(ch) not in cmap], f"{edition or 'English'} font lacks characters"
    english = (SITE / "_static/vit-cjk.woff2").stat().st_size
    chinese = (SITE / "zh/_static/vit-cjk.woff2").stat().st_size
    assert english < chinese / 2, f"English pages' font: {english} bytes, not cut to their characters ({chinese})"


@pytest.mark.parametrize("path", both_editions())
def test_figures_keep_legible_labels_on_a_phone(browser, server, path):
    """On a 390-px phone every figure and player picture shows at least MIN_SCALE of its size, less a rounding margin
    (10-point labels 9 px or more; vit_edu.book.wide_figures), a wide one scrolling in its own box, which a keyboard
    reaches and a screen reader names, while the page itself does not scroll sideways."""
    from vit_edu.book.wide_figures import MIN_SCALE

    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(server + path, wait_until="load")
        page.evaluate(LOAD_LAZY_IMAGES)
        small = page.evaluate("""() => Array.from(document.querySelectorAll('main img')).filter(i => i.naturalWidth)
            .map(i => [i.getAttribute('src').split('/').pop().slice(0, 24), i.getBoundingClientRect().width / i.naturalWidth])""")
        small = [(name, round(scale, 2)) for name, scale in small if scale < MIN_SCALE - 0.03]
        assert not small, f"{path}: pictures shrunk below {MIN_SCALE:.0%} on a phone: {small[:5]}"
        boxes = page.evaluate("""() => Array.from(document.querySelectorAll('.vit-wide-figure'))
            .filter(b => b.scrollWidth > b.clientWidth + 1)
            .map(b => [b.tabIndex, b.getAttribute('role'), b.getAttribute('aria-label') || ''])""")
        assert all(tab == 0 and role == "region" and label for tab, role, label in boxes), f"{path}: {boxes[:3]}"
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    finally:
        page.close()
