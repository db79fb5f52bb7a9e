"""Read a submission's code without running it: calls of the book's reference in an answer, and tampering.

Two findings, with different consequences in :mod:`vit_edu.homework.grade`:

- :func:`reference_uses`: an answer (the graded function's body, or the expression assigned to a graded name)
  that names its question's reference, e.g. ``my_patchify = vit_edu.patchify``. That question scores 0.
- :func:`tampering`: code that reaches into what grading relies on: rebinding attributes of modules (the checks,
  otter, torch, builtins), the grader's own modules, code objects and frames, ``exec``/``eval``/``__import__``,
  profiler hooks, classes that redefine comparison or conversion (``__eq__`` tricks). The submission is flagged
  and scores 0; an instructor reads the flag and decides.

Honest homework uses none of these. IPython syntax (``%magic``, ``!shell``) is translated before parsing; a cell
that does not parse is skipped (it fails when it runs, too).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import nbformat

# Attributes that reach code, frames, the interpreter's tables or a function's hidden state.
INTERNALS = {
    "__code__", "__closure__", "__wrapped__", "__globals__", "__builtins__", "__subclasses__", "__defaults__",
    "__kwdefaults__", "__func__", "__self__", "__mro__", "__bases__", "f_back", "f_globals", "f_locals",
    "f_builtins", "_getframe", "gi_frame", "tb_frame",
}
# Methods a class may define to fake an answer's comparison, conversion or type.
FAKING_DUNDERS = {
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__", "__int__", "__index__",
    "__hash__", "__abs__", "__sub__", "__rsub__", "__torch_function__", "__torch_dispatch__", "__instancecheck__",
    "__subclasscheck__", "__getattr__", "__getattribute__", "__array__", "__array_function__", "__reduce__",
    "__reduce_ex__", "__getstate__",
}
DYNAMIC = {"exec", "eval", "compile", "__import__", "globals", "vars", "setattr", "delattr", "breakpoint"}
# Modules whose import reaches the grader, the interpreter's internals or dynamic imports (the public checks,
# vit_edu.homework.checks, and importlib.util.find_spec, which the set-up cell uses, are fine).
GRADING_MODULES = ("otter.", "vit_edu.homework.harness", "vit_edu.homework.grade", "vit_edu.homework.scan",
                   "vit_edu.homework.sandbox", "vit_edu.homework.build", "vit_edu.homework.strip",
                   "vit_edu.homework.runner", "vit_edu.homework.selfcheck", "hidden", "ctypes", "gc", "builtins",
                   "inspect", "sys.monitoring", "importlib.")
ALLOWED_IMPORTS = ("importlib.util",)
GRADER_PARTS = {"harness", "grade", "scan", "sandbox", "build", "strip", "runner", "selfcheck"}
IMPORTLIB = {"reload", "import_module", "invalidate_caches", "spec_from_file_location", "module_from_spec",
             "exec_module", "find_loader", "machinery", "abc"}
HOOKS = {"setprofile", "settrace", "setrecursionlimit", "addaudithook", "register", "unregister"}
MAGICS = {"run", "load_ext", "reload_ext", "autoreload", "aimport", "load", "config", "env"}
OTTER_INIT = ("import otter", "grader = otter.Notebook(")


@dataclass(frozen=True)
class Finding:
    """One thing the scan saw: the submission's cell index and what it does."""

    cell: int
    what: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.what}"


def python_source(cell_source: str) -> str:
    """A cell's source as plain Python (IPython's own translation of magics and shell escapes)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(cell_source)


def _parse(cell_source: str) -> ast.Module | None:
    try:
        return ast.parse(python_source(cell_source))
    except (SyntaxError, ValueError):
        return None


def _root(node: ast.AST) -> str | None:
    """The name at the root of ``a.b.c`` or ``a.b[0].c`` (None for anything else)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` as text (``?`` for parts that are not names)."""
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return f"{_dotted(node.func)}()"
    return "?"


def _modules_bound(trees: list[ast.Module]) -> set[str]:
    """Names that ``import`` statements bind anywhere in the notebook (``import torch``, ``from x import y``)."""
    names = {"grader", "__builtins__"}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.asname or a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names |= {a.asname or a.name for a in node.names}
    return names


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The full names an import statement brings in: ``from a.b import c`` -> ``a.b.c``."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [f"{node.module or ''}.{a.name}" for a in node.names]


def _is_grading(name: str) -> bool:
    """Whether importing ``name`` reaches the grader or the interpreter's internals."""
    top = name.split(".")[0]
    return top in ("gc", "ctypes", "builtins", "inspect") or top.startswith("hidden") or (
        name.startswith(GRADING_MODULES) and not name.startswith(ALLOWED_IMPORTS))


def _cell_tampering(tree: ast.Module, modules: set[str]) -> list[str]:
    """What one parsed cell does to grading, in words (empty for honest code)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [f"imports {name}" for name in _imported(node) if _is_grading(name)]
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and _root(t) in modules:
                    found.append(f"rebinds {_dotted(t)}")
                elif isinstance(t, (ast.Attribute, ast.Subscript)) and any(
                        isinstance(n, ast.Attribute) and n.attr in INTERNALS | {"__dict__", "__class__"}
                        for n in ast.walk(t)):
                    found.append(f"writes to {_dotted(t.value if isinstance(t, ast.Subscript) else t)}")
                elif isinstance(t, ast.Name) and t.id == "__builtins__":
                    found.append("rebinds __builtins__")
        elif isinstance(node, ast.Attribute) and (node.attr in INTERNALS or (node.attr == "modules"
                                                                            and _root(node) == "sys")):
            found.append(f"reaches {_dotted(node)}")
        elif isinstance(node, ast.Attribute) and (node.attr in IMPORTLIB and "importlib" in _dotted(node)
                                                  or node.attr in GRADER_PARTS and _dotted(node).endswith(
                                                      f"homework.{node.attr}")):
            found.append(f"uses {_dotted(node)}")
        elif isinstance(node, ast.Name) and node.id in DYNAMIC | {"__builtins__"} and isinstance(node.ctx, ast.Load):
            found.append(f"uses {node.id}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in HOOKS and _root(node.func) in modules:
                found.append(f"calls {_dotted(node.func)}")
            elif node.func.attr in ("run_line_magic", "run_cell_magic") and node.args and isinstance(
                    node.args[0], ast.Constant) and node.args[0].value in MAGICS:
                found.append(f"runs the %{node.args[0].value} magic")
            elif _root(node.func) == "get_ipython" and node.func.attr not in (
                    "run_line_magic", "run_cell_magic", "system", "getoutput"):
                found.append(f"calls {_dotted(node.func)}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in FAKING_DUNDERS:
                    found.append(f"class {node.name} defines {item.name}")
    return found


def _trees(nb: nbformat.NotebookNode) -> list[tuple[int, ast.Module]]:
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            tree = _parse(cell.source)
            if tree is not None:
                out.append((i, tree))
    return out


def tampering(nb: nbformat.NotebookNode) -> list[Finding]:
    """Every place where the submission reaches into what grading relies on."""
    trees = _trees(nb)
    modules = _modules_bound([t for _, t in trees])
    findings = []
    for i, tree in trees:
        for what in dict.fromkeys(_cell_tampering(tree, modules)):  # keep order, drop repeats
            findings.append(Finding(i, what))
    return findings


def _answer_nodes(tree: ast.Module, name: str) -> list[ast.AST]:
    """The definition of ``name`` (a ``def``) or the values assigned to it, at the cell's top level."""
    nodes: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            defaults = [d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None]
            nodes += [*node.body, *defaults]  # not the annotations: `block: vit_edu.EncoderBlock` is fine
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            nodes.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            if node.value is not None:
                nodes.append(node.value)
    return nodes


def reference_uses(nb: nbformat.NotebookNode, answers: dict[str, tuple[str, ...]],
                   references: dict[str, tuple[str, ...]]) -> dict[str, list[Finding]]:
    """Question -> places where its answer names its own reference (``patchify`` for ``vit_edu.patches.patchify``)."""
    trees = _trees(nb)
    out: dict[str, list[Finding]] = {}
    for question, names in answers.items():
        forbidden = {ref.split(".")[-1] for ref in references.get(question, ())}
        forbidden |= {ref.split(".")[-2] for ref in references.get(question, ()) if ref.count(".") >= 2
                      and ref.split(".")[-2][:1].isupper()}  # a method's class: EncoderBlock for .forward
        if not forbidden:
            continue
        for i, tree in trees:
            for name in names:
                for node in _answer_nodes(tree, name):
                    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                    used |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                    for ref in sorted(used & forbidden):
                        out.setdefault(question, []).append(Finding(i, f"`{name}` uses {ref}, the book's reference"))
    return out
