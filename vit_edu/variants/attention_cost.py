"""Chapter 14's measurement: seconds and peak memory of one attention layer as the image grows, and the fitted exponent.

One ViT-B/16 attention layer (D = 768, 12 heads: the Q, K, V and output projections and the attention between
them), batch 1, float32, no gradients, on ONE thread, at image sides 224 … 1024 px with 16-pixel patches
(N = 196 … 4096 tokens), computed four ways:

* ``explicit``: :class:`vit_edu.MultiHeadSelfAttention` with ``need_weights=True``, softmax(QKᵀ/√d)V with the
  N×N weights of every head materialised;
* ``sdpa``: the same layer's fast path, ``torch.nn.functional.scaled_dot_product_attention``;
* ``window`` and ``shifted window``: :class:`vit_edu.variants.WindowAttention` with M×M windows (M = 8), without
  and with the cyclic shift and its mask. A window must divide the grid: at 224 px (14×14) it is not run.

Seconds: the best of ``--repeats`` calls after one untimed call, in CPU seconds of the calling thread (with one
thread torch computes there; unlike wall-clock time, this does not count waiting for a CPU that others share).
Peak memory, two ways: (1) from the shapes, the bytes of ONE set of N×N weights (h·N²·4), what the explicit path
must hold at least once; (2) measured with
``torch.profiler`` (``profile_memory=True``): its allocation events replayed in time order, each op's own
allocations counted at its start and its own frees at its end, and the peak of the running sum, that is the
largest extra memory the call held at once (the input and the layer's weights, allocated before, not counted).
``tracemalloc`` would see none of it: torch allocates outside Python's allocator. The exponent k of
time ∝ N^k (and memory ∝ N^k) is the slope of a least-squares line through the log-log points.

    python -m vit_edu.variants.attention_cost --out vit_edu/checkpoints/attention_cost.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from vit_edu._checks import check_positive_int
from vit_edu.attention import MultiHeadSelfAttention
from vit_edu.variants.windows import WindowAttention

SIZES = (224, 256, 384, 512, 640, 768, 896, 1024)  # image sides in pixels
PATCH, DIM, HEADS, WINDOW = 16, 768, 12, 8  # ViT-B/16's width and heads; Swin's windows hold 7×7, ours 8×8
METHODS = ("explicit", "sdpa", "window", "shifted window")
LARGE_N = 1024  # "large" exponents are fitted on N >= this (where the N² terms dominate a ViT-B layer's cost)
BYTES_FLOAT32 = 4


def best_seconds(fn: Callable[[], object], repeats: int, clock: Callable[[], float] = time.thread_time) -> float:
    """The shortest time of ``repeats`` calls of ``fn`` after one untimed call, read from ``clock``.

    The default clock is the calling thread's CPU time. With ``torch.set_num_threads(1)`` torch computes on the
    calling thread, so this is the layer's own compute; on a shared machine, wall-clock time (``time.perf_counter``)
    would also count the time spent waiting for a busy CPU.
    """
    check_positive_int("repeats", repeats)
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def profiled_peak_bytes(fn: Callable[[], object]) -> int:
    """The largest extra CPU memory ``fn()`` holds at once, replayed from ``torch.profiler``'s allocation events."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    changes = []  # (time, bytes): an op's own allocations at its start, its own frees at its end
    for event in prof.events():
        own = event.self_cpu_memory_usage
        if own:
            changes.append((event.time_range.start if own > 0 else event.time_range.end, own))
    running = peak = 0
    for _, change in sorted(changes, key=lambda c: (c[0], -c[1])):
        running += change
        peak = max(peak, running)
    return peak


def fit_exponent(ns: Sequence[int], values: Sequence[float]) -> float:
    """Slope k of the least-squares line log(value) = k·log(N) + c."""
    if len(ns) != len(values) or len(ns) < 2 or min(ns) <= 0 or min(values) <= 0:
        raise ValueError(
            f"need at least two positive (N, value) pairs of equal count, got {list(ns)} and {list(values)}")
    xs, ys = [math.log(n) for n in ns], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def layer_calls(side: int, *, dim: int = DIM, heads: int = HEADS, window: int = WINDOW) -> dict[str, Callable]:
    """One zero-argument call per method that can run at ``side`` px (``window`` ones only if M divides the grid)."""
    grid = side // PATCH
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(dim, heads).eval()
    x = torch.randn(1, grid * grid, dim)  # (1, N, D)
    calls = {"explicit": lambda: attn(x, need_weights=True), "sdpa": lambda: attn(x)}
    if grid % window == 0:
        for name, shift in (("window", 0), ("shifted window", window // 2)):
            layer = WindowAttention(dim, heads, window, shift).eval()
            layer.attn.load_state_dict(attn.state_dict())  # the same weights as the global layer
            calls[name] = lambda layer=layer: layer(x.reshape(1, grid, grid, dim))  # (1, H, W, D)
    return calls


def measure(sizes: Sequence[int] = SIZES, repeats: int = 7) -> dict:
    """Every method at every size: seconds, profiled peak bytes, and the exponents fitted on all and on large N."""
    bad = [s for s in sizes if isinstance(s, bool) or not isinstance(s, int) or s <= 0 or s % PATCH]
    if bad or len(sizes) < 2:
        raise ValueError(
            f"sizes must be at least two image sides divisible by the patch size {PATCH}, got {list(sizes)}")
    rows: dict[str, list[dict]] = {m: [] for m in METHODS}
    with torch.no_grad():
        for side in sizes:
            n = (side // PATCH) ** 2
            for name, call in layer_calls(side).items():
                seconds = best_seconds(call, repeats)
                peak = profiled_peak_bytes(call)
                rows[name].append({"image_size": side, "num_tokens": n, "seconds": seconds, "peak_bytes": peak})
                print(f"{side:5d} px  N = {n:5d}  {name:15s} {seconds * 1e3:9.2f} ms  peak {peak / 2**20:8.1f} MiB",
                      flush=True)
    exponents = {}
    for name, runs in rows.items():
        large = [r for r in runs if r["num_tokens"] >= LARGE_N]
        exponents[name] = {
            f"{what}_{span}": fit_exponent([r["num_tokens"] for r in pick], [r[key] for r in pick])
            for what, key in (("time", "seconds"), ("memory", "peak_bytes"))
            for span, pick in (("all", runs), ("large", large))
        }
    return {
        "setting": {"patch_size": PATCH, "dim": DIM, "heads": HEADS, "window": WINDOW, "batch": 1,
                    "dtype": "float32", "threads": torch.get_num_threads(), "repeats": repeats, "large_n": LARGE_N,
                    "timing": f"best of {repeats} calls after one untimed call, CPU time of the calling thread",
                    "memory": "torch.profiler allocation events, peak of the running sum during one call"},
        "nxn_bytes": {str((s // PATCH) ** 2): HEADS * ((s // PATCH) ** 2) ** 2 * BYTES_FLOAT32 for s in sizes},
        "machine": {"torch": torch.__version__, "processor": platform.processor() or platform.machine(),
                    "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "runs": rows,
        "exponents": exponents,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = measure(SIZES, args.repeats)
    for name, k in result["exponents"].items():
        print(f"{name:15s} " + "  ".join(f"{key} {value:.2f}" for key, value in k.items()))
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
