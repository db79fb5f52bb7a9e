"""Launch buttons follow repository.url: none on the default site, working Binder and Colab links with one.

Runs with the browser stage of make test (after make build). The second test builds a two-page book with a
repository configured through BOOK_REPOSITORY_URL, as `make book REPOSITORY_URL=...` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"


def test_default_site_has_no_launch_or_repository_buttons():
    if not (SITE / "index.html").exists():
        if os.environ.get("CI"):
            pytest.fail("no built site in _build/html")
        pytest.skip("no built site in _build/html (run make build)")
    assert not yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    for page in ["book/01_patches.html", "book/homework/student/hw1_tokens.html", "book/intro.html"]:
        html = (SITE / page).read_text()
        assert "mybinder.org" not in html and "colab.research.google.com" not in html, page
        assert "Source repository" not in html and "github.com/vit-hands-on" not in html, page


def test_site_with_a_repository_gets_binder_and_colab_buttons(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/01_patches\n")
    env = {**os.environ, "BOOK_REPOSITORY_URL": "https://github.com/someone/vit-book"}
    subprocess.run([str(JUPYTER_BOOK), "build", str(ROOT), "--toc", str(toc), "--path-output", str(tmp_path),
                    "--all"], check=True, capture_output=True, env=env, cwd=ROOT)
    html = (tmp_path / "_build" / "html" / "book" / "01_patches.html").read_text()
    assert ("https://mybinder.org/v2/gh/someone/vit-book/main?urlpath=lab/tree/book/01_patches.ipynb"
            in html.replace("&amp;", "&"))
    assert "https://colab.research.google.com/github/someone/vit-book/blob/main/book/01_patches.ipynb" in html
    assert "https://github.com/someone/vit-book" in html  # the repository button
