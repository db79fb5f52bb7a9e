import dataclasses
import math
import os
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from vit_edu import CONFIGS, VisionTransformer

matplotlib.use("Agg")  # tests draw figures without a screen

HOMEWORK_SECRET = "a course secret for the tests"  # the secret every homework test grades with
CHROMIUM = "/usr/bin/chromium"  # Debian's Chromium, driven by playwright (never `playwright install`)


def require_browser(what: str, missing: str | None = None) -> None:
    """Skip a browser test without Chromium or playwright (or for ``missing``); in CI, where it must run, fail."""
    if missing is None and not Path(CHROMIUM).exists():
        missing = f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    if missing is None:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "playwright is not installed"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{what} cannot run in CI: {missing}")
        pytest.skip(missing)


def randomize(model: torch.nn.Module, std: float = 0.05) -> torch.nn.Module:
    """Add noise to every parameter, so zero-initialised parts (head, CLS) take part in comparisons."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * std)
    return model


@pytest.fixture
def small_config():
    return dataclasses.replace(
        CONFIGS["vit-ti/16"], image_size=(32, 48), patch_size=8, embed_dim=32, depth=2, num_heads=4,
        mlp_dim=64, num_classes=7,
    )


@pytest.fixture
def small_model(small_config):
    torch.manual_seed(0)
    return randomize(VisionTransformer(small_config)).eval()


def site_frame_count(site: dict, full: dict) -> int:
    """How many frames a site player renders; checks that every site value is one the live widget offers."""
    for name, values in site.items():
        assert set(values) <= set(full[name]), f"site control {name!r} offers values the live widget lacks"
    return math.prod(len(values) for values in site.values())


def assert_explains_problem(frame: tuple, *expected: str) -> None:
    """A view's answer to settings it cannot draw: one axes with one text, and a caption naming the problem."""
    fig, caption = frame
    try:
        assert "Nothing to show" in caption
        assert any(text in caption for text in expected), caption
        assert len(fig.axes) == 1 and len(fig.axes[0].texts) == 1
    finally:
        plt.close(fig)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    """The homework built once for the whole run (student notebooks, masters, Gradescope zips) with the tests'
    secret: the grading tests and the Gradescope test read the same build."""
    from vit_edu.homework.build import build_homework

    out = tmp_path_factory.mktemp("homework")
    build_homework(Path(__file__).resolve().parents[1] / "book" / "homework", out, HOMEWORK_SECRET)
    return out
