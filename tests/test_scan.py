"""The static reading of a submission: every tampering route is flagged, honest homework never is."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from vit_edu.homework.scan import opaque_code, python_source, reference_uses, tampering

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


PATCHIFY_REFS = ("vit_edu.patches.patchify", "vit_edu.patches.unpatchify", "vit_edu.embedding.PatchEmbedding",
                 "einops.rearrange", "einops.einops.rearrange", "torch.nn.functional.unfold", "torch.Tensor.unfold",
                 "torch.nn.Unfold")
ATTENTION_REFS = ("vit_edu.attention.attention_weights", "vit_edu.attention.MultiHeadSelfAttention",
                  "torch.nn.functional.scaled_dot_product_attention", "torch.nn.MultiheadAttention")
SET_UP = "import torch\nimport torch.nn.functional as F\nimport vit_edu"


def uses(*cells: str, answer: str = "my_patchify", refs: tuple[str, ...] = PATCHIFY_REFS) -> list[str]:
    """What reference_uses says of ``answer`` in a notebook of the set-up cell and ``cells``."""
    found = reference_uses(notebook(SET_UP, *cells), {"q": (answer,)}, {"q": refs})
    return [str(f) for f in found.get("q", [])]


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
    assert [str(f) for f in found["ch01_patchify"]] == [
        "cell 0: `my_patchify` uses vit_edu.patches.patchify (as `vit_edu.patchify`)"]
    assert len(found["ch04_embed_tokens"]) == 2 and "ch08_readout" not in found


# Honest answers the old scan flagged: a mention of torch.Tensor, local names and parameters named like a reference.
HONEST_ANSWERS = {
    "annotation and isinstance": "def my_patchify(images: torch.Tensor, p: int) -> torch.Tensor:\n"
                                 "    assert isinstance(images, torch.Tensor)\n"
                                 "    out: torch.Tensor = images.reshape(len(images), -1, p)\n    return out",
    "a local named like the reference": "def my_patchify(images, p):\n"
                                        "    patchify = images.reshape(len(images), -1, p)\n    return patchify",
    "a parameter named like the reference": "def my_patchify(patchify, p):\n    return patchify.reshape(-1, p)",
    "a lambda's parameter": "my_patchify = lambda patchify, p: patchify.flatten(2)",
    "the reference imported elsewhere, a local here": "from vit_edu.patches import patchify\n\n"
                                                      "def my_patchify(images, p):\n"
                                                      "    patchify = images.flatten(2)\n    return patchify",
    "the student's own function named like the reference": "def patchify(x, p):\n    return x.flatten(2)\n\n"
                                                           "def my_patchify(x, p):\n    return patchify(x, p)",
    "a name of another module": "import einops\n\ndef my_patchify(images, p):\n"
                                "    return einops.repeat(images, 'b ... -> b ...')",
}


@pytest.mark.parametrize("source", HONEST_ANSWERS.values(), ids=HONEST_ANSWERS)
def test_honest_answers_reach_no_reference(source):
    assert uses(source) == []


def test_a_local_named_like_an_attention_reference_is_not_a_use():
    # vit_edu.attention.attention_weights is the reference; the answer's own variable has the same name
    answer = ("from vit_edu.attention import attention_weights\n\n"
              "def my_attention(q, k, v):\n    attention_weights = (q @ k.transpose(-2, -1)).softmax(-1)\n"
              "    return attention_weights @ v")
    assert uses(answer, answer="my_attention", refs=ATTENTION_REFS) == []


REAL_USES = {
    "from vit_edu.patches import patchify as p\n\ndef my_patchify(x, s):\n    return p(x, s)":
        "`my_patchify` uses vit_edu.patches.patchify (as `p`)",
    "import vit_edu.patches as vp\nmy_patchify = lambda x, s: vp.patchify(x, s)":
        "uses vit_edu.patches.patchify (as `vp.patchify`)",
    "def my_patchify(x, s):\n    from vit_edu import patches\n    return patches.patchify(x, s)":
        "uses vit_edu.patches.patchify (as `patches.patchify`)",
    "P = vit_edu.patchify\n\ndef my_patchify(x, s):\n    return P(x, s)": "uses vit_edu.patches.patchify (as `P`)",
    "def my_patchify(x, s):\n    return getattr(vit_edu, 'patchify')(x, s)":
        "uses vit_edu.patches.patchify (as `getattr(vit_edu, 'patchify')`)",
    "def my_patchify(x, s):\n    return getattr(vit_edu.patches, 'patch' + 'ify')(x, s)":
        "has dynamic access to vit_edu.patches",
    "def my_patchify(x, s):\n    return vars(vit_edu.patches)['patchify'](x, s)":
        "has dynamic access to vit_edu.patches",
    "from vit_edu import *\n\ndef my_patchify(x, s):\n    return patchify(x, s)":
        "uses `patchify`, perhaps vit_edu.patches.patchify (no cell binds `patchify` by name)",
    "def my_patchify(x, s):\n    return patches.patchify(x, s)":
        "uses `patches.patchify`, perhaps vit_edu.patches.patchify (no cell binds `patches` by name)",
    "def my_patchify(x, s):\n    return F.unfold(x, s, stride=s).mT": "uses torch.nn.functional.unfold (as `F.unfold`)",
    "def my_patchify(x, s):\n    return x.unfold(2, s, s).unfold(3, s, s).flatten(4)":
        "uses `.unfold` of an object, perhaps torch.Tensor.unfold",
    "def my_patchify(x, s):\n    from einops import rearrange as r\n"
    "    return r(x, 'b c (h p) (w q) -> b (h w) (c p q)', p=s, q=s)":
        "uses einops.rearrange (as `r`)",
}


@pytest.mark.parametrize("source, words", REAL_USES.items(), ids=range(len(REAL_USES)))
def test_real_uses_of_a_reference_are_flagged(source, words):
    found = uses(source)
    assert found and all(f.startswith("cell 1: `my_patchify` ") for f in found), found
    assert any(words in f for f in found), found


def test_a_reference_reached_through_a_helper_is_flagged_where_the_helper_is():
    found = uses("def _cut(x, s):\n    return vit_edu.patchify(x, s)",
                 "def _helper(x, s):\n    return _cut(x, s)", "def my_patchify(x, s):\n    return _helper(x, s)")
    assert found == ["cell 1: `my_patchify` uses vit_edu.patches.patchify (as `vit_edu.patchify`) through `_cut`"]


def test_a_method_reference_is_reached_through_its_class_not_by_naming_the_class():
    refs = ("vit_edu.block.EncoderBlock.forward",)
    used = "def residual_block_forward(block, x):\n    return vit_edu.EncoderBlock.forward(block, x)"
    named = ("def residual_block_forward(block, x):\n    assert isinstance(block, vit_edu.EncoderBlock)\n"
             "    x = x + block.attn(block.norm1(x))\n    return x + block.mlp(block.norm2(x))")
    assert uses(used, answer="residual_block_forward", refs=refs) == [
        "cell 1: `residual_block_forward` uses vit_edu.block.EncoderBlock.forward (as `vit_edu.EncoderBlock.forward`)"]
    assert uses(named, answer="residual_block_forward", refs=refs) == []


def test_ipython_syntax_is_read_as_python():
    assert "get_ipython().run_line_magic('time', 'x = 1')" in python_source("%time x = 1")


def test_annotations_may_name_the_reference():
    nb = notebook("def pre_ln(block: vit_edu.EncoderBlock, x, *, k=None) -> torch.Tensor:\n    return x")
    assert reference_uses(nb, {"q": ("pre_ln",)}, {"q": ("vit_edu.block.EncoderBlock.forward",)}) == {}


@pytest.mark.parametrize("master", sorted(MASTERS.glob("hw*.ipynb")), ids=lambda p: p.stem)
def test_the_masters_hide_no_code(master):
    cells = nbformat.read(master, as_version=4).cells
    assert [opaque_code(c.source) for c in cells if c.cell_type == "code" and opaque_code(c.source)] == []


@pytest.mark.parametrize("source", [*HONEST, *HONEST_ANSWERS.values(), *REAL_USES, "eval('1 + 1')",
                                    "exec('x = 1')", "import importlib\nimportlib.import_module('einops')",
                                    "import base64\npng = base64.b64decode(data)", "__import__('torch')"])
def test_code_that_shows_what_it_runs_is_not_opaque(source):
    assert opaque_code(source) == []


OPAQUE = {
    "import marshal, types\nmy_patchify = types.FunctionType(marshal.loads(blob), globals())":
        ["types.FunctionType: a function or code object built", "marshal.loads: code or objects rebuilt from bytes"],
    "import base64\nexec(base64.b64decode('ZGVmIG15X3BhdGNoaWZ5KHgsIHApOiByZXR1cm4geA=='))":
        ["exec of code computed at run time", "base64.b64decode decodes data that it runs"],
    "import zlib as z\nexec(z.decompress(blob), globals())": ["exec", "zlib.decompress decodes data that it runs"],
    "import codecs\nsrc = codecs.decode(blob, 'rot13')\nmy_patchify = eval(src)":
        ["eval of code computed at run time", "codecs.decode decodes data that it runs"],
    "code = compile(text, '<answer>', 'exec')": ["compile of code computed at run time"],
    "from pickle import loads\nmy_patchify = loads(blob)": ["pickle.loads: code or objects rebuilt from bytes"],
    "import marshal\nf = getattr(marshal, 'loads')(blob)": ["marshal.loads"],
    "from types import CodeType\nc = CodeType(*fields)": ["types.CodeType: a function or code object built from data"],
    "def f(): pass\nf.__code__ = f.__code__.replace(co_consts=consts)": ["f.__code__.replace"],
    "m = __import__('vit' + '_edu')": ["__import__ of a computed name"],
    "from importlib import import_module as im\nm = im(name)": ["importlib.import_module of a computed name"],
}


@pytest.mark.parametrize("source, words", OPAQUE.items(), ids=range(len(OPAQUE)))
def test_code_that_hides_what_it_runs_is_opaque(source, words):
    found = opaque_code(source)
    assert len(found) == len(words) and all(w in f for w, f in zip(words, found)), found


def test_a_computed_import_alone_decodes_nothing_it_runs():
    assert opaque_code("import base64, importlib\nm = importlib.import_module(base64.b64decode(b).decode())") == [
        "importlib.import_module of a computed name"]
