"""Benchmark of the "Try it" page (a script, not a test): update latency in headless Chromium, and bytes added.

    .venv/bin/python tests/bench_tryit.py [--updates 60]      # after make build

Latency is measured in the page, from the input change to every view redrawn, over alternating test images and
brush strokes; the model's own share (session.run) is reported beside it. Bytes: what the page loads that no
other page does (the runtime, its WebAssembly, the ONNX file, the examples), raw and gzip-compressed.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import statistics
import sys
import threading
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # test_site, tests
from test_site import CHROMIUM, CHROMIUM_ARGS, SITE, QuietHandler  # noqa: E402

ADDED = ["_static/ort/ort.wasm.min.js", "_static/ort/ort-wasm-simd-threaded.mjs", "_static/ort/ort-wasm-simd-threaded.wasm",
         "_static/tryit/shapes_vit.onnx", "_static/tryit/examples.json", "_static/tryit/tryit.js"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=60)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/book/try_it.html")
        page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=60_000)
        page.locator("#tryit-canvas").scroll_into_view_if_needed()
        box = page.locator("#tryit-canvas").bounding_box()
        total, model = [], []
        for i in range(args.updates):
            runs = page.evaluate("window.vitTryIt.runs")
            if i % 2:
                page.select_option("#tryit-example", str(i % 8))
            else:  # one click of the brush: one change
                page.mouse.click(box["x"] + box["width"] * (0.2 + 0.6 * (i % 7) / 7), box["y"] + box["height"] / 2)
            page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy")
            last = page.evaluate("window.vitTryIt.last")
            total.append(last["ms"])
            model.append(last["model_ms"])
        browser.close()
    httpd.shutdown()
    median = statistics.median(total)
    p90 = sorted(total)[int(0.9 * len(total)) - 1]
    print(f"update latency over {len(total)} updates: median {median:.1f} ms, 90th percentile {p90:.1f} ms, "
          f"max {max(total):.1f} ms (goal: under 50 ms)")
    print(f"  of which session.run: median {statistics.median(model):.1f} ms "
          f"({statistics.median(model) / median:.0%} of the update)")
    raw = packed = 0
    for rel in ADDED:
        data = (SITE / rel).read_bytes()
        raw += len(data)
        packed += len(gzip.compress(data, 9))
        print(f"  {rel}: {len(data) / 1e6:.2f} MB ({len(gzip.compress(data, 9)) / 1e6:.2f} MB gzip)")
    print(f"bytes added: {raw / 1e6:.2f} MB raw, {packed / 1e6:.2f} MB gzip-compressed (goal: under 5 MB)")


if __name__ == "__main__":
    main()
