"""Benchmark of the "Try it" page (a script, not a test): bytes transferred, first prediction, update latency.

    .venv/bin/python tests/bench_tryit.py [--site DIR] [--loads 7] [--updates 60]      # after make build

The site is served by a plain http.server, which compresses nothing (as a bare static host may not). Each of the
``--loads`` fresh page loads has a new browser context (empty cache); every response the page and its workers
receive is counted (headers and body, as sent), split by file, and the time from navigation start to the first
prediction shown (the class bars drawn) is taken in the page. Update latency is measured in the page, from the
input change to every view redrawn, over alternating test images and brush strokes; the model's own share
(session.run) is reported beside it.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import statistics
import sys
import threading
from collections import defaultdict
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # test_site, tests
from test_site import CHROMIUM, CHROMIUM_ARGS, SITE, QuietHandler  # noqa: E402

PAGE = "book/try_it.html"
GOAL_MB, GOAL_S = 5.0, 3.0
# In the page before any script: the time (ms since navigation start) the class bars first get drawn.
FIRST_PREDICTION = """
document.addEventListener("DOMContentLoaded", () => {
  const probs = document.getElementById("tryit-probs");
  if (!probs) return;
  const seen = new MutationObserver(() => {
    if (probs.childElementCount) { window.__firstPrediction = performance.now(); seen.disconnect(); }
  });
  seen.observe(probs, { childList: true, subtree: true });
});
"""


def load_once(browser, url: str) -> tuple[float, dict[str, int]]:
    """One load in a fresh context: (ms to the first prediction, bytes transferred per path)."""
    context = browser.new_context()
    finished, failed = [], []
    context.on("requestfinished", lambda request: finished.append(request))
    context.on("requestfailed", lambda request: failed.append(request))
    page = context.new_page()
    page.add_init_script(FIRST_PREDICTION)
    page.goto(url)
    page.wait_for_function("window.__firstPrediction !== undefined", timeout=120_000)
    page.wait_for_load_state("networkidle")
    first = page.evaluate("window.__firstPrediction")
    sizes: dict[str, int] = defaultdict(int)
    for request in finished:
        got = request.sizes()
        sizes[request.url.split("/", 3)[-1].split("?")[0]] += got["responseBodySize"] + got["responseHeadersSize"]
    for request in failed:
        sizes[f"FAILED {request.url}"] = 0
    context.close()
    return first, dict(sizes)


def update_latency(browser, url: str, updates: int) -> tuple[list[float], list[float]]:
    """Per update: ms from the input change to every view redrawn, and of which session.run."""
    page = browser.new_page()
    page.goto(url)
    page.wait_for_function("window.vitTryIt && window.vitTryIt.runs >= 1", timeout=120_000)
    page.locator("#tryit-canvas").scroll_into_view_if_needed()
    box = page.locator("#tryit-canvas").bounding_box()
    total, model = [], []
    for i in range(updates):
        runs = page.evaluate("window.vitTryIt.runs")
        if i % 2:
            page.select_option("#tryit-example", str(i % 8))
        else:  # one click of the brush: one change
            page.mouse.click(box["x"] + box["width"] * (0.2 + 0.6 * (i % 7) / 7), box["y"] + box["height"] / 2)
        page.wait_for_function(f"window.vitTryIt.runs > {runs} && !window.vitTryIt.busy")
        last = page.evaluate("window.vitTryIt.last")
        total.append(last["ms"])
        model.append(last["model_ms"])
    page.close()
    return total, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site to serve (default: _build/html)")
    parser.add_argument("--loads", type=int, default=7, help="fresh page loads for the first prediction")
    parser.add_argument("--updates", type=int, default=60)
    args = parser.parse_args()
    if not (args.site / PAGE).is_file():
        sys.exit(f"{args.site / PAGE} does not exist: build the site first (make build) or give --site")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(args.site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/{PAGE}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        loads = [load_once(browser, url) for _ in range(args.loads)]
        total, model = update_latency(browser, url, args.updates)
        browser.close()
    httpd.shutdown()

    print(f"site: {args.site}")
    firsts = sorted(first for first, _ in loads)
    print(f"first prediction after navigation start, {len(firsts)} fresh loads: median {statistics.median(firsts) / 1000:.2f} s "
          f"(min {firsts[0] / 1000:.2f} s, max {firsts[-1] / 1000:.2f} s; goal: <= {GOAL_S:.0f} s)")
    sizes = loads[-1][1]
    print(f"bytes transferred by the page (last load, headers and bodies, {len(sizes)} files; no compression by the server):")
    for path, n in sorted(sizes.items(), key=lambda item: -item[1]):
        if n >= 10_000 or path.startswith("FAILED"):
            print(f"  {n / 1e6:7.3f} MB  {path}")
    small = [n for path, n in sizes.items() if n < 10_000 and not path.startswith("FAILED")]
    print(f"  {sum(small) / 1e6:7.3f} MB  {len(small)} files under 10 kB each")
    print(f"bytes transferred in all: {sum(sizes.values()) / 1e6:.2f} MB (goal: <= {GOAL_MB:.0f} MB)")
    median = statistics.median(total)
    p90 = sorted(total)[int(0.9 * len(total)) - 1]
    print(f"update latency over {len(total)} updates: median {median:.1f} ms, 90th percentile {p90:.1f} ms, "
          f"max {max(total):.1f} ms (goal: under 50 ms)")
    print(f"  of which session.run: median {statistics.median(model):.1f} ms "
          f"({statistics.median(model) / median:.0%} of the update)")


if __name__ == "__main__":
    main()
