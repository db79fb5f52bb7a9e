"""The grading copy of the package: the named references are gone, everything else still works."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vit_edu.homework.strip import REMOVED, strip_package


def run_with(package, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` with ``package`` (a stripped copy) as ``vit_edu``, the editable install's finder left out."""
    prelude = ("import sys\nsys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"
               f"sys.path.insert(0, {str(package.parent)!r})\n")
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120)


def test_references_raise_and_their_code_is_not_in_the_copy(tmp_path):
    package = strip_package(["vit_edu.patches.patchify", "vit_edu.block.EncoderBlock.forward",
                             "vit_edu.config.ViTConfig.seq_len", "vit_edu.embedding.PatchEmbedding"],
                            tmp_path / "vit_edu")
    source = (package / "patches.py").read_text()
    assert ".permute(" not in source.split("def patchify(")[1].split("\ndef ")[0]
    done = run_with(package, """
import torch, vit_edu
from vit_edu.patches import patchify
assert vit_edu.__file__.startswith(%r)
for call in (lambda: patchify(torch.zeros(1, 1, 4, 4), 2), lambda: vit_edu.ViTConfig(image_size=8, patch_size=4).seq_len,
             lambda: vit_edu.PatchEmbedding(vit_edu.ViTConfig(image_size=8, patch_size=4))):
    try:
        call()
    except NotImplementedError as e:
        print("gone:", e)
cfg = vit_edu.ViTConfig(image_size=8, patch_size=4, embed_dim=8, num_heads=2, depth=1)
print("grid", cfg.grid_size, "toy", vit_edu.patches.toy_image().shape)
block = vit_edu.EncoderBlock(cfg)
try:
    block(torch.zeros(1, 5, 8))
except NotImplementedError:
    print("forward gone")
print("attention", tuple(block.attn(torch.zeros(1, 5, 8))[0].shape))
""" % str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("gone:") == 3 and REMOVED in done.stdout
    assert "grid (2, 2)" in done.stdout and "forward gone" in done.stdout and "attention (1, 5, 8)" in done.stdout


def test_an_unknown_reference_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no definition of 'nothing_here'"):
        strip_package(["vit_edu.patches.nothing_here"], tmp_path / "vit_edu")
    with pytest.raises(ValueError, match="no module of vit_edu"):
        strip_package(["vit_edu.no_module.f"], tmp_path / "vit_edu")
