"""The static reading of a submission: every tampering route is flagged, honest homework never is."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from vit_edu.homework.scan import python_source, reference_uses, tampering

MASTERS = Path(__file__).resolve().parents[1] / "book" / "homework"


def notebook(*sources: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


@pytest.mark.parametrize("master", sorted(MASTERS.glob("hw*.ipynb")), ids=lambda p: p.stem)
def test_the_masters_are_not_flagged(master):
    assert tampering(nbformat.read(master, as_version=4)) == []


HONEST = [
    "import torch\nfrom torch import nn\nimport vit_edu\n_ = torch.manual_seed(0)",
    "# Initialize Otter\nimport otter\ngrader = otter.Notebook('hw1_tokens.ipynb')",
    'grader.check("ch01_patchify")',
    "import importlib.util, os, subprocess, sys\nimportlib.util.find_spec('vit_edu')",
    "from vit_edu.homework.checks import check\ncheck(\"ch01_patchify\", my_patchify=lambda x, p: x)",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.rcParams['figure.dpi'] = 80",
    "!ls\nmodel = nn.Linear(2, 2)\nmodel.weight = nn.Parameter(torch.zeros(2, 2))\nlist(model.modules())",
    "class Data(torch.utils.data.Dataset):\n    def __len__(self):\n        return 3\n"
    "    def __getitem__(self, i):\n        return i",
    "def broken(:\n    pass",  # does not parse: fails when it runs, not a finding
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_code_is_not_flagged(source):
    assert tampering(notebook(source)) == []


ATTACKS = {
    "from vit_edu.homework import checks\nchecks.check = lambda *a, **k: None": "rebinds checks.check",
    "import vit_edu\nvit_edu.patchify = lambda x, p: x": "rebinds vit_edu.patchify",
    "import torch\ndel torch.allclose": "rebinds torch.allclose",
    "import otter.test_files.abstract_test as t": "imports otter.test_files.abstract_test",
    "from otter.test_files import abstract_test": "imports otter.test_files.abstract_test",
    "import builtins\nbuiltins.isinstance = lambda *a: True": "imports builtins",
    "__builtins__.len = lambda x: 0": "__builtins__",
    "import sys\nsys.modules['vit_edu'] = None": "reaches sys.modules",
    "import sys\nsys.setprofile(None)": "calls sys.setprofile",
    "exec('x = 1')": "uses exec",
    "setattr(grader, 'check', print)": "uses setattr",
    "f = lambda: 0\nf.__code__ = (lambda: 1).__code__": "f.__code__",
    "import vit_edu\nvit_edu.patchify.__wrapped__": "reaches vit_edu.patchify.__wrapped__",
    "import importlib, vit_edu\nimportlib.reload(vit_edu)": "uses importlib.reload",
    "from importlib import reload": "imports importlib.reload",
    "import vit_edu.homework.harness as c": "imports vit_edu.homework.harness",
    "import hidden_hw1_tokens": "imports hidden_hw1_tokens",
    "import gc\ngc.get_objects()": "imports gc",
    "class Anything:\n    def __eq__(self, other):\n        return True": "class Anything defines __eq__",
    "class T(torch.Tensor):\n    @classmethod\n    def __torch_function__(cls, *a, **k):\n        pass": "defines __torch_function__",
    "get_ipython().events.register('pre_run_cell', print)": "calls get_ipython().events.register",
    "%load_ext autoreload": "runs the %load_ext magic",
}


@pytest.mark.parametrize("source, words", ATTACKS.items(), ids=range(len(ATTACKS)))
def test_each_tampering_route_is_flagged_with_its_cell(source, words):
    found = tampering(notebook("import torch", source))
    assert found and all(f.cell == 1 for f in found)
    assert any(words in str(f) for f in found), found


def test_answers_that_name_their_reference():
    nb = notebook(
        "my_patchify = vit_edu.patchify",
        "def embed_tokens(t, c, p):\n    return vit_edu.add_position_embedding(vit_edu.prepend_cls(t, c), p)",
        "def readout(tokens, pool):\n    return tokens[:, 0]\n\ncheck = vit_edu.patchify(x, 2)",  # not in the answer
    )
    answers = {"ch01_patchify": ("my_patchify",), "ch04_embed_tokens": ("embed_tokens",), "ch08_readout": ("readout",)}
    references = {"ch01_patchify": ("vit_edu.patches.patchify",),
                  "ch04_embed_tokens": ("vit_edu.embedding.prepend_cls", "vit_edu.embedding.add_position_embedding"),
                  "ch08_readout": ("vit_edu.patches.patchify",)}
    found = reference_uses(nb, answers, references)
    assert [str(f) for f in found["ch01_patchify"]] == ["cell 0: `my_patchify` uses patchify, the book's reference"]
    assert len(found["ch04_embed_tokens"]) == 2 and "ch08_readout" not in found


def test_ipython_syntax_is_read_as_python():
    assert "get_ipython().run_line_magic('time', 'x = 1')" in python_source("%time x = 1")


def test_annotations_may_name_the_reference():
    nb = notebook("def pre_ln(block: vit_edu.EncoderBlock, x, *, k=None) -> torch.Tensor:\n    return x")
    assert reference_uses(nb, {"q": ("pre_ln",)}, {"q": ("vit_edu.block.EncoderBlock.forward",)}) == {}
