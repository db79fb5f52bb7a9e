"""The "Try it" page in headless Chromium: it runs offline and computes what PyTorch computes.

Needs the built site (make build writes the ONNX file, the examples and `_build/tryit_reference.json`, PyTorch's
outputs for the examples). Every request that leaves the site's own origin is blocked and reported.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_site import ROOT, browser, open_page, server  # noqa: F401  (fixtures)

from vit_edu.book.i18n import CJK

PAGE = "book/try_it.html"
REFERENCE = ROOT / "_build" / "tryit_reference.json"
TOLERANCE = 1e-4


@pytest.fixture()
def page(browser, server):  # noqa: F811
    page, problems = open_page(browser, server + PAGE)
    page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=60_000)
    yield page
    page.close()
    assert not problems, "\n".join(problems)  # no console error, no failed or off-site request


def after(page, action) -> dict:
    """Do ``action`` and return the views of the model run it caused."""
    runs = page.evaluate("window.vitTryIt.runs")
    action()
    page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy", timeout=30_000)
    return page.evaluate("window.vitTryIt.last")


def test_every_test_image_matches_pytorch(page):
    reference = json.loads(REFERENCE.read_text())
    examples = json.loads((ROOT / "_build" / "html" / "_static" / "tryit" / "examples.json").read_text())
    worst = 0.0
    for i, rgb in enumerate(examples["images"]):
        views = after(page, lambda: page.select_option("#tryit-example", str(i)))
        pixels = np.array(rgb, dtype=np.float32).reshape(32, 32, 3).transpose(2, 0, 1).ravel() / 255
        np.testing.assert_allclose(views["input"], pixels, atol=1e-7)
        pairs = {
            "probabilities": reference["probabilities"][i],
            "lens_probabilities": np.array(reference["lens_probabilities"])[:, i],
            "attentions": np.array(reference["attentions"])[:, i],
            "rollout": reference["rollout"][i],
        }
        for name, want in pairs.items():
            error = np.abs(np.ravel(views[name]) - np.ravel(want)).max()
            assert error <= TOLERANCE, f"test image {i}: {name} differs from PyTorch by {error:.2e}"
            worst = max(worst, error)
        label = examples["classes"][examples["labels"][i]]
        assert page.inner_text("#tryit-status").startswith("Prediction: ")
        assert examples["classes"][int(np.argmax(views["probabilities"]))] in page.inner_text("#tryit-status")
        assert label in page.locator("#tryit-example option:checked").inner_text()
    print(f"largest difference from PyTorch over {len(examples['images'])} images: {worst:.1e}")


def test_drawing_changes_the_input_and_the_prediction(page):
    cleared = after(page, lambda: page.click("#tryit-clear"))
    page.locator("#tryit-canvas").scroll_into_view_if_needed()
    box = page.locator("#tryit-canvas").bounding_box()

    def stroke():
        page.mouse.move(box["x"] + 0.3 * box["width"], box["y"] + 0.3 * box["height"])
        page.mouse.down()
        for t in np.linspace(0.3, 0.7, 12):
            page.mouse.move(box["x"] + t * box["width"], box["y"] + 0.3 * box["height"])
        for t in np.linspace(0.3, 0.7, 12):
            page.mouse.move(box["x"] + 0.7 * box["width"], box["y"] + t * box["height"])
        page.mouse.up()

    drawn = after(page, stroke)
    changed = np.abs(np.array(drawn["input"]) - np.array(cleared["input"])) > 0
    assert changed.sum() >= 3 * 40  # at least 40 pixels painted, in all three channels
    assert np.abs(np.array(drawn["probabilities"]) - np.array(cleared["probabilities"])).max() > 1e-3


def test_keyboard_alone_can_paint(page):
    before = after(page, lambda: page.click("#tryit-clear"))
    page.focus("#tryit-canvas")
    page.keyboard.press("ArrowRight")
    views = after(page, lambda: page.keyboard.press("Space"))
    assert np.abs(np.array(views["input"]) - np.array(before["input"])).max() > 0.5
    cleared = after(page, lambda: page.keyboard.press("Delete"))
    assert cleared["input"] == before["input"]


def test_a_picture_from_disk_is_squeezed_to_32_pixels(page, tmp_path):
    from PIL import Image

    picture = Image.new("RGB", (120, 80), (0, 0, 0))
    picture.paste((255, 255, 255), (30, 20, 90, 60))  # a white rectangle in the middle
    path = tmp_path / "mine.png"
    picture.save(path)
    views = after(page, lambda: page.set_input_files("#tryit-file", str(path)))
    red = np.array(views["input"][: 32 * 32]).reshape(32, 32)
    assert red[16, 16] > 0.9 and red[2, 2] < 0.1 and red[16, 2] < 0.1  # white in the middle, black at the edge
    assert page.eval_on_selector("#tryit-example", "s => s.value") == ""


@pytest.mark.parametrize("width", [390, 1366])
def test_fits_the_screen(browser, server, width):  # noqa: F811
    page, problems = open_page(browser, server + PAGE)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=60_000)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for control in ["#tryit-colour", "#tryit-brush", "#tryit-example", "#tryit-file"]:
            assert page.locator(f"label:has({control})").count() == 1, f"{control} has no label"
            assert page.is_enabled(control)
        assert not problems, "\n".join(problems)
    finally:
        page.close()


def test_the_chinese_page_computes_the_same_and_speaks_chinese(browser, server):  # noqa: F811
    reference = json.loads(REFERENCE.read_text())
    page, problems = open_page(browser, server + "zh/" + PAGE)
    try:
        page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=60_000)
        views = after(page, lambda: page.select_option("#tryit-example", "1"))
        error = np.abs(np.ravel(views["probabilities"]) - np.ravel(reference["probabilities"][1])).max()
        assert error <= TOLERANCE, f"the Chinese page's probabilities differ from PyTorch by {error:.2e}"
        for selector in ["#tryit-status", "#tryit-lens", "#tryit-attention figcaption", "#tryit-rollout-caption",
                         "#tryit-example option:checked", "label:has(#tryit-brush)", "#tryit-keys"]:
            text = page.locator(selector).first.inner_text()
            assert CJK.search(text), f"{selector} is not Chinese on the Chinese page: {text!r}"
            assert not re.search(r"[A-Za-z]{4,}", re.sub(r"\b(CLS|Shift|Space|Delete)\b", "", text)), (selector, text)
        assert not problems, "\n".join(problems)
    finally:
        page.close()
