import base64
import functools
import http.server
import json
import re
import threading

import matplotlib.pyplot as plt
import pytest

from vit_edu.widgets.frames import frame_player


def _view(size, mode):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(f"{size}-{mode}")
    return fig, f"<b>{size}</b> {mode}"


def _data(html):
    return json.loads(re.search(r'class="vit-frames-data">(.*?)</script>', html).group(1).replace("<\\/", "</"))


def test_one_frame_per_combination_in_mixed_radix_order():
    html = frame_player(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}).data
    data = _data(html)
    assert data["sizes"] == [3, 2]
    assert [caption for _, caption in data["frames"]] == [
        f"<b>{s}</b> {m}" for s in (8, 16, 32) for m in ("a", "b")
    ]
    assert len({png for png, _ in data["frames"]}) == 6  # every picture differs
    assert data["kinds"] == ["range", "select"]  # numbers get a slider, words a menu
    assert data["titles"] == ["size", "mode"]
    assert "http" not in html  # self-contained: nothing to fetch


def test_start_picks_the_first_frame_and_output_is_deterministic():
    controls = {"size": [8, 16], "mode": ["a", "b"]}
    a = frame_player(_view, controls, start={"size": 16, "mode": "b"}).data
    assert a == frame_player(_view, controls, start={"size": 16, "mode": "b"}).data
    assert '<div class="vit-frames-caption"><b>16</b> b</div>' in a
    assert _data(a)["start"] == [1, 1]
    assert "data-control" not in a.split("<script")[0]  # controls come from the script: none dead without it
    assert "vit-frames-note" in a


def test_titles_are_words_and_unknown_start_values_raise():
    data = _data(frame_player(lambda patch_size: _view(patch_size, "a"), {"patch_size": [8, 16]}).data)
    assert data["titles"] == ["patch size"]
    with pytest.raises(ValueError, match="not among"):
        frame_player(_view, {"size": [8], "mode": ["a"]}, start={"size": 9})


def test_bad_controls_raise():
    with pytest.raises(ValueError, match="at least one value"):
        frame_player(_view, {"size": [], "mode": ["a"]})
    with pytest.raises(ValueError, match="unknown controls"):
        frame_player(_view, {"size": [8], "mode": ["a"]}, start={"colour": 1})


def test_a_control_with_one_value_is_a_fixed_fact_not_a_control():
    data = _data(frame_player(_view, {"size": [8, 16], "mode": ["a"]}).data)
    assert data["kinds"] == ["range", "fixed"] and data["sizes"] == [2, 1]
    assert [caption for _, caption in data["frames"]] == ["<b>8</b> a", "<b>16</b> a"]


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium():
    import os

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True)
        yield browser
        browser.close()


def _page(chromium, body: str):
    page = chromium.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # What reaches the page: a notebook's shortcuts listen here (JupyterLab: keydown on the document, bubbling).
    page.set_content("<script>window.pageKeys = []; document.addEventListener('keydown', "
                     "e => window.pageKeys.push(e.key));</script>" + body)
    return page, errors


def test_in_a_browser_a_fixed_value_is_labelled_text_and_the_other_controls_pick_the_right_frames(chromium):
    def view(size, mode, shade):
        return _view(size, mode + shade)

    html = frame_player(view, {"size": [8, 16, 32], "mode": ["a"], "shade": ["x", "y"]}).data
    page, errors = _page(chromium, html)
    labels = page.locator(".vit-frames-controls label").all_inner_texts()
    assert [t.split()[0] for t in labels] == ["size", "mode", "shade"]
    assert page.locator(".vit-frames-fixed").inner_text() == "a" and "mode" in labels[1]
    assert page.locator("[data-control]").count() == 2  # a slider and a menu; nothing for the fixed value
    page.locator("input[type=range]").fill("2")
    page.locator("select").select_option("1")
    assert page.locator(".vit-frames-caption").inner_html() == "<b>32</b> ay"
    assert page.locator(".vit-frames").get_attribute("data-frame") == "5"  # (size 2, mode 0, shade 1) of 3·1·2
    assert page.locator(".vit-frames-note").count() == 0 and not errors  # the website: no no-script note


def test_in_a_browser_keys_on_a_control_stay_with_it_and_jupyter_keeps_a_run_this_cell_note(chromium):
    html = frame_player(_view, {"size": [8, 16], "mode": ["a", "b"]}).data
    page, errors = _page(chromium, f'<div class="jp-OutputArea">{html}</div>')
    page.locator("select").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("r")
    page.keyboard.press("Control+s")
    assert page.locator("select").input_value() == "1"  # the menu took the arrow
    assert page.evaluate("window.pageKeys") == ["Control", "s"]  # plain keys stayed; Ctrl+S still reaches the page
    assert "Run this cell" in page.locator(".vit-frames-note").inner_text() and not errors


# ---------------------------------------------------------------------------------------------------------
# The website's frames as shared files (vit_edu.book.site_frames)


def _site(tmp_path, player: str):
    """A two-edition site: the same player on an English page and, captions translated, on its Chinese twin."""
    zh = player.replace('"<b>8<\\/b> a"', '"<b>8<\\/b> 甲"')
    pages = {"index.html": "<p>home</p>", "book/ch.html": player, "zh/book/ch.html": zh,
             "book/plain.html": "<p>no player</p>"}
    for name, body in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<!DOCTYPE html><html><body>{body}</body></html>", encoding="utf-8")
    return tmp_path


def _player_html(start=None):
    return frame_player(_view, {"size": [8, 16], "mode": ["a", "b"]}, start=start).data


def test_the_site_keeps_each_frame_once_as_a_file_both_editions_name_it_and_a_second_pass_changes_nothing(tmp_path):
    from vit_edu.book.site_frames import png_size, rewrite_site

    html = _player_html(start={"size": 16})
    inline = [png for png, _ in _data(html)["frames"]]
    site = _site(tmp_path, html)
    report = rewrite_site(site)
    assert (report.pages, report.written, report.frames) == (2, 4, 4)  # two pages, four distinct frames
    files = {}
    for page, base in (("book/ch.html", "../frames/"), ("zh/book/ch.html", "../../frames/")):
        text = (site / page).read_text(encoding="utf-8")
        assert "base64,iVBOR" not in text  # no frame inline
        data = _data(text)
        assert data["base"] == base
        files[page] = [((site / page).parent / (base + name)).resolve() for name, _ in data["frames"]]
        assert [f.read_bytes() for f in files[page]] == [base64.b64decode(png) for png in inline]
        # The first picture: the start frame (size 16, mode a = frame 2), lazy, with its size against a jump.
        width, height = png_size(files[page][2].read_bytes())
        assert re.search(rf'<img class="vit-frames-image" alt="[^"]*" src="{base}{data["frames"][2][0]}" '
                         rf'loading="lazy" width="{width}" height="{height}">', text), text[:600]
    assert files["book/ch.html"] == files["zh/book/ch.html"]  # one file per frame for both editions
    assert _data((site / "zh/book/ch.html").read_text(encoding="utf-8"))["frames"][0][1] == "<b>8</b> 甲"
    assert sorted(p.name for p in (site / "frames").iterdir()) == sorted(f.name for f in files["book/ch.html"])
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    again = rewrite_site(site)
    assert (again.pages, again.unchanged, again.written, again.removed) == (0, 2, 0, 0)
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before


def test_one_edition_rebuilt_alone_keeps_the_other_editions_frames_and_drops_frames_no_page_names(tmp_path):
    from vit_edu.book.site_frames import rewrite_site

    site = _site(tmp_path, _player_html())
    rewrite_site(site)
    (site / "frames" / "0123456789abcdef.png").write_bytes(b"stale")  # a frame of an older build
    (site / "book/ch.html").write_text(_player_html(start={"mode": "b"}), encoding="utf-8")  # English rebuilt
    report = rewrite_site(site)
    assert (report.pages, report.unchanged, report.written, report.removed) == (1, 1, 0, 1)
    assert len(list((site / "frames").iterdir())) == 4


def test_a_site_of_the_chinese_edition_alone_is_rewritten(tmp_path):
    """make book LANG=zh builds only _build/html/zh/: its players get their files all the same."""
    from vit_edu.book.site_frames import rewrite_site

    site = _site(tmp_path, _player_html())
    for english in ("index.html", "book/ch.html", "book/plain.html"):
        (site / english).unlink()
    (site / "zh/index.html").write_text("<p>首页</p>", encoding="utf-8")
    report = rewrite_site(site)
    assert (report.pages, report.written) == (1, 4)
    assert _data((site / "zh/book/ch.html").read_text(encoding="utf-8"))["base"] == "../../frames/"


def test_a_bad_page_or_a_missing_frame_is_reported_with_the_page_and_the_player(tmp_path):
    from vit_edu.book.site_frames import main, rewrite_site

    html = _player_html()
    uid = re.search(r'id="(vit-frames-[0-9a-f]+)"', html).group(1)
    bad_png = _site(tmp_path / "a", html.replace('[["iVBOR', '[["notapng', 1))
    with pytest.raises(ValueError, match=rf"book/ch.html: player {uid}: a frame is not a base64 PNG"):
        rewrite_site(bad_png)
    cut = _site(tmp_path / "b", html.replace('<div class="vit-frames" ', "<div "))
    with pytest.raises(ValueError, match=r"book/ch.html: 1 player data blocks, but 0 whole players"):
        rewrite_site(cut)
    gone = _site(tmp_path / "c", html)
    rewrite_site(gone)
    name = _data((gone / "book/ch.html").read_text(encoding="utf-8"))["frames"][1][0]
    (gone / "frames" / name).unlink()
    with pytest.raises(SystemExit, match=rf"ch.html: player {uid}: names frames that are not in .*{name}"):
        main(["--site", str(gone)])
    with pytest.raises(ValueError, match="not a built site"):
        rewrite_site(tmp_path / "nowhere")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path):
    """``tmp_path`` served over HTTP (a browser reports the requests of an http page, not of a file:// one)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_in_a_browser_a_rewritten_player_fetches_only_the_frame_it_shows(chromium, tmp_path, served):
    from vit_edu.book.site_frames import rewrite_site

    site = _site(tmp_path, _player_html())
    rewrite_site(site)
    names = [name for name, _ in _data((site / "book/ch.html").read_text(encoding="utf-8"))["frames"]]
    page = chromium.new_page()
    requested, errors = [], []
    page.on("request", lambda r: requested.append(r.url.rsplit("/", 1)[-1]) if r.url.endswith(".png") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served + "book/ch.html", wait_until="load")
    page.wait_for_load_state("networkidle")
    assert requested == [names[0]]  # the first picture only, not the other three
    page.locator("select").select_option("1")  # mode b: frame 1
    page.wait_for_function("document.querySelector('img.vit-frames-image').complete")
    assert requested == [names[0], names[1]]  # just the frame now shown
    assert page.locator("img.vit-frames-image").evaluate("i => i.naturalWidth > 0") and not errors
    assert page.locator(".vit-frames-caption").inner_html() == "<b>8</b> b"
