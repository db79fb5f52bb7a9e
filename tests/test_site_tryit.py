"""The "Try it" page in headless Chromium: it runs offline and computes what PyTorch computes.

Needs the built site (make build writes the ONNX file, the examples and `_build/tryit_reference.json`, PyTorch's
outputs for the examples). Every request that leaves the site's own origin is blocked and reported.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading

import numpy as np
import pytest
from test_site import ROOT, SITE, QuietHandler, browser, open_page, server  # noqa: F401  (fixtures)

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
        label, classes = examples["shows"][i], page.evaluate("window.vitTryIt.model.classes")
        assert page.inner_text("#tryit-status").startswith("Prediction: ")
        assert classes[int(np.argmax(views["probabilities"]))] in page.inner_text("#tryit-status")
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
        for control in ["#tryit-colour", "#tryit-brush", "#tryit-example", "#tryit-file", "#tryit-model-file",
                        "#tryit-compare-file"]:
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
                         "#tryit-example option:checked", "label:has(#tryit-brush)", "#tryit-keys",
                         "#tryit-model-facts", "#tryit-model-update", "label:has(#tryit-model-file)"]:
            text = page.locator(selector).first.inner_text()
            assert CJK.search(text), f"{selector} is not Chinese on the Chinese page: {text!r}"
            assert not re.search(r"[A-Za-z]{4,}", re.sub(r"\b(CLS|Shift|Space|Delete)\b|\.onnx", "", text)), (selector, text)
        assert not problems, "\n".join(problems)
    finally:
        page.close()


# ---- your own model ------------------------------------------------------------------------------------------
# Models unlike the shipped one, exported during the test: other image and patch sizes, depth, heads, classes,
# mean pooling, no position embeddings. Their weights are random: what is checked is that the page computes what
# PyTorch computes for whatever model it is given, and draws it at the model's own shape.
OWN = {
    "mean48.onnx": dict(image_size=48, patch_size=6, num_classes=6, embed_dim=48, depth=3, num_heads=2, mlp_dim=96,
                        pool="mean"),
    "nopos.onnx": dict(image_size=32, patch_size=8, num_classes=4, embed_dim=32, depth=2, num_heads=4, mlp_dim=64,
                       pos_embed="none", input_norm=(0.5, 0.25)),
}


@pytest.fixture(scope="module")
def own_models(tmp_path_factory):
    import torch

    from vit_edu import ViTConfig, VisionTransformer
    from vit_edu.book.export import export_onnx

    folder = tmp_path_factory.mktemp("own_models")
    models = {}
    for k, (name, settings) in enumerate(OWN.items()):
        torch.manual_seed(k)
        model = VisionTransformer(ViTConfig(**settings)).eval()
        with torch.no_grad():  # weights larger than the initialisation's, so the maps are not all flat
            for parameter in model.parameters():
                parameter.mul_(2.0)
        export_onnx(model, folder / name, classes=[f"kind {i}" for i in range(settings["num_classes"])])
        models[name] = (model, folder / name)
    return models


def _open(page, path) -> dict:
    """Open the model file at ``path`` with the page's control; the views of its first run."""
    runs = page.evaluate("window.vitTryIt.runs")
    page.set_input_files("#tryit-model-file", str(path))
    page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy && "
                           f"window.vitTryIt.model.name === {json.dumps(path.name)}", timeout=60_000)
    return page.evaluate("window.vitTryIt.last")


@pytest.mark.parametrize("name", list(OWN))
def test_an_own_model_opens_and_matches_pytorch(page, own_models, name):
    import torch

    from vit_edu.book.export import reference_outputs

    model, path = own_models[name]
    c = model.config
    _open(page, path)
    worst = 0.0
    for i in range(3):
        views = after(page, lambda: page.select_option("#tryit-example", str(i)))
        images = torch.tensor(views["input"], dtype=torch.float32).reshape(1, c.in_channels, *c.image_size)
        want = reference_outputs(model, images)
        for key in ["probabilities", "lens_probabilities", "attentions", "rollout"]:
            error = np.abs(np.ravel(views[key]) - want[key].numpy().ravel()).max()
            assert error <= TOLERANCE, f"{name}, test image {i}: {key} differs from PyTorch by {error:.2e}"
            worst = max(worst, error)
    # Drawn at the model's shape: its classes, its layers in the lens, one map per layer and head.
    assert page.locator("#tryit-probs .tryit-bar").count() == c.num_classes
    assert page.locator("#tryit-probs").inner_text().count("kind ") == c.num_classes
    assert page.locator("#tryit-lens tbody tr").count() == c.depth
    assert page.locator("#tryit-attention figure").count() == c.depth * c.num_heads
    assert (c.pool == "mean") == ("mean over every query" in page.inner_text("#tryit-attention-title"))
    facts = page.inner_text("#tryit-model-facts")
    assert f"{c.image_size[0]}×{c.image_size[1]} pixels, patch {c.patch_size}" in facts, facts
    assert page.inner_text("#tryit-model-name") == name
    model_info = page.evaluate("window.vitTryIt.model")
    print(f"{name}: {model_info['bytes'] / 1e6:.2f} MB, loaded in {model_info['load_ms']:.0f} ms, last update "
          f"{views['ms']:.0f} ms (model {views['model_ms']:.0f} ms); largest difference from PyTorch {worst:.1e}")


def test_back_to_the_books_model_from_the_keyboard(page, own_models):
    _, path = own_models["mean48.onnx"]
    _open(page, path)
    runs = page.evaluate("window.vitTryIt.runs")
    page.focus("#tryit-model-shipped")
    page.keyboard.press("Enter")
    page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy && "
                           "window.vitTryIt.model.name === 'shapes_vit.onnx'", timeout=60_000)
    reference = json.loads(REFERENCE.read_text())
    views = after(page, lambda: page.select_option("#tryit-example", "2"))
    assert np.abs(np.ravel(views["probabilities"]) - np.ravel(reference["probabilities"][2])).max() <= TOLERANCE
    assert page.is_disabled("#tryit-model-shipped")


def _foreign_onnx(path):
    """A valid ONNX model from elsewhere: one Identity node, no metadata of ours."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "elsewhere", [x], [y])
    onnx.save(helper.make_model(graph), str(path))
    return path


def _disagreeing(source, path):
    """An export whose metadata claims one layer more than its graph has."""
    import onnx

    model = onnx.load(str(source))
    for prop in model.metadata_props:
        if prop.key == "num_layers":
            prop.value = str(int(prop.value) + 1)
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("kind, message", [
    ("corrupt", "not an ONNX file"), ("foreign", "not an export of vit_edu.book.export"),
    ("disagreeing", "does not match its metadata: attentions 3×1×2×64×64, where the metadata means attentions 4×"),
])
def test_a_file_that_is_not_an_export_is_refused_and_the_page_keeps_working(page, own_models, tmp_path, kind, message):
    _, good = own_models["mean48.onnx"]
    _open(page, good)
    if kind == "corrupt":
        path = tmp_path / "corrupt.onnx"
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])  # an export cut short, as a broken download
    elif kind == "foreign":
        path = _foreign_onnx(tmp_path / "elsewhere.onnx")
    else:
        path = _disagreeing(good, tmp_path / "disagreeing.onnx")
    page.set_input_files("#tryit-model-file", str(path))
    page.wait_for_function("window.vitTryIt.refused !== null && window.vitTryIt.refused !== undefined", timeout=60_000)
    text = page.inner_text("#tryit-model-status")
    assert message in text and path.name in text and "mean48.onnx" in text, text
    assert page.evaluate("window.vitTryIt.model.name") == "mean48.onnx"
    views = after(page, lambda: page.select_option("#tryit-example", "1"))  # it still runs the model it had
    assert len(views["probabilities"]) == 6


def test_two_models_side_by_side_on_the_same_drawing(page, own_models):
    import torch

    from vit_edu.book.export import reference_outputs

    model, path = own_models["mean48.onnx"]
    assert not page.is_visible("#tryit-second")
    runs = page.evaluate("window.vitTryIt.runs")
    page.set_input_files("#tryit-compare-file", str(path))
    page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy && window.vitTryIt.second", timeout=60_000)
    reference = json.loads(REFERENCE.read_text())
    views = after(page, lambda: page.select_option("#tryit-example", "3"))
    second = page.evaluate("window.vitTryIt.second")
    # The book's model on the left, as before; the compared model on the same drawing, at its own 48×48 size.
    assert np.abs(np.ravel(views["probabilities"]) - np.ravel(reference["probabilities"][3])).max() <= TOLERANCE
    images = torch.tensor(second["input"], dtype=torch.float32).reshape(1, 3, 48, 48)
    want = reference_outputs(model, images)
    for key in ["probabilities", "lens_probabilities", "rollout"]:
        error = np.abs(np.ravel(second[key]) - want[key].numpy().ravel()).max()
        assert error <= TOLERANCE, f"compared model: {key} differs from PyTorch by {error:.2e}"
    assert page.is_visible("#tryit-second") and page.inner_text("#tryit-b-name") == "mean48.onnx"
    assert page.locator("#tryit-b-probs .tryit-bar").count() == 6 and page.locator("#tryit-probs .tryit-bar").count() == 4
    assert page.locator("#tryit-b-lens tbody tr").count() == 3
    page.set_viewport_size({"width": 390, "height": 900})  # both panels on a phone: stacked, no sideways scroll
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    runs = page.evaluate("window.vitTryIt.runs")
    page.focus("#tryit-compare-stop")
    page.keyboard.press("Enter")
    page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy", timeout=60_000)
    assert not page.is_visible("#tryit-second") and page.evaluate("window.vitTryIt.second") is None


def test_a_burst_of_changes_is_announced_once_after_the_pause(page):
    """The status line follows every stroke; a screen reader's polite region hears the final prediction once."""
    announce = page.locator("#tryit-announce")
    assert announce.get_attribute("aria-live") == "polite" and page.get_attribute("#tryit-status", "aria-live") is None
    page.wait_for_timeout(800)
    before = page.evaluate("window.vitTryIt.announced")
    for i in range(5):
        after(page, lambda i=i: page.select_option("#tryit-example", str(i)))
    page.wait_for_timeout(1200)
    assert page.evaluate("window.vitTryIt.announced") == before + 1
    assert announce.inner_text() == page.inner_text("#tryit-status") and announce.inner_text().startswith("Prediction: ")


def test_a_keyboard_user_can_skip_the_drawing_to_the_test_images(page):
    skip = page.locator("a[href='#tryit-example']")
    skip.focus()
    assert skip.is_visible(), "the skip link shows when it has focus"
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#tryit-example"
    assert page.locator("#tryit-example").evaluate("e => e.getBoundingClientRect().top >= 0 && e.getBoundingClientRect().bottom <= innerHeight")


# ---- what the page fetches -----------------------------------------------------------------------------------
# A static host may compress nothing, so the site ships ONNX Runtime's WebAssembly xz-compressed and the model and
# test images gzip-compressed, unpacked in the page (tryit.js; the Makefile writes them).
PACKED = ["_static/ort/ort-wasm-simd-threaded.wasm.xz", "_static/tryit/shapes_vit.onnx.gz",
          "_static/tryit/examples.json.gz"]


def test_the_page_fetches_the_compressed_runtime_model_and_images(browser, server):  # noqa: F811
    requested: list[str] = []
    page, problems = open_page(browser, server + PAGE, requested)
    try:
        page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=60_000)
        ours = [url.split("/_static/", 1)[1] for url in requested if "/_static/ort/" in url or "/_static/tryit/" in url]
        for path in PACKED:
            assert path.split("/", 1)[1] in ours, f"the page did not fetch {path}: {ours}"
        raw = [path for path in ours if path.endswith((".wasm", ".onnx", ".json"))]
        assert not raw, f"the page fetched uncompressed files: {raw}"
        assert not problems, "\n".join(problems)
    finally:
        page.close()
    for path in PACKED:  # compressed (the runtime's WebAssembly is 14.8 MB unpacked)
        assert (ROOT / "_build" / "html" / path).stat().st_size < 3_000_000, path


def _serve(body: bytes):
    """A route handler that answers with ``body``."""
    return lambda route: route.fulfill(body=body, content_type="application/octet-stream")


def _spoiled(path, how: str) -> bytes:
    """The site's file at ``path``, cut in half or with its header kept and the rest replaced by noise."""
    data = (ROOT / "_build" / "html" / path).read_bytes()
    if how == "truncated":
        return data[: len(data) // 2]
    return data[:12] + np.random.default_rng(0).integers(0, 256, len(data) - 12, dtype=np.uint8).tobytes()


@pytest.mark.parametrize(("path", "how"), [(PACKED[0], "truncated"), (PACKED[0], "corrupt"), (PACKED[1], "corrupt")])
def test_a_file_that_cannot_be_unpacked_is_named_on_the_page(browser, server, path, how):  # noqa: F811
    """No silent blank: the status line (spoken at once) names the file that could not be unpacked."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(f"**/{path}", _serve(_spoiled(path, how)))
    try:
        page.goto(server + PAGE)
        name = path.rsplit("/", 1)[1]
        want = f"The model could not start: {name} could not be unpacked ("
        page.wait_for_function(f"document.getElementById('tryit-status').textContent.startsWith({json.dumps(want)})",
                               timeout=60_000)
        status = page.inner_text("#tryit-status")
        assert status.endswith(").") and len(status) > len(want) + 2, f"no reason given: {status!r}"
        assert page.inner_text("#tryit-announce") == status  # an error is announced at once
        assert page.evaluate("window.vitTryIt.runs") == 0 and not page.is_enabled("#tryit-example")
        assert errors and name in errors[0], errors  # api.ready rejects with the same words
    finally:
        page.close()


class GzipHost(QuietHandler):
    """A host that sends .gz files with Content-Encoding: gzip, so that the browser unpacks them before the page."""

    def end_headers(self):
        if self.path.split("?")[0].endswith(".gz"):
            self.send_header("Content-Encoding", "gzip")
        super().end_headers()


def test_a_host_that_unpacks_the_gzip_itself_is_understood(browser):  # noqa: F811
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(GzipHost, directory=str(SITE)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    page, problems = open_page(browser, f"http://127.0.0.1:{httpd.server_address[1]}/{PAGE}")
    try:
        page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=60_000)
        assert page.evaluate("window.vitTryIt.model.name") == "shapes_vit.onnx"
        assert page.inner_text("#tryit-status").startswith("Prediction: ")
        assert not problems, "\n".join(problems)
    finally:
        page.close()
        httpd.shutdown()
