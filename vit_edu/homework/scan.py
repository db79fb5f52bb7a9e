"""Read a submission's code without running it: what an answer reaches, code that hides what it runs, tampering.

Every finding is for the instructor's review, never a score (:mod:`vit_edu.homework.grade` lists them as flags):

- :func:`reference_uses`: an answer (the graded function's body, or the expression assigned to a graded name), or a
  function of the notebook it calls, that reaches its question's reference: by name or alias
  (``from vit_edu.patches import patchify as p``), or by a dynamic look-up in a module that holds one
  (``getattr(vit_edu.patches, 'patch' + 'ify')``); and, marked "perhaps", a method of an object known only at run
  time (``x.unfold``) or a name no cell binds (``from vit_edu import *``). A name is the package's object only where
  an import or an alias binds it so: a parameter or a variable named ``patchify`` is the answer's own. The
  reference is gone from the question's process, so reaching it earns nothing; the flag tells the instructor why.
- :func:`opaque_code`: code that hides what it runs (``exec`` of a computed string, ``marshal.loads``, a code
  object built from data, a computed import); the copy check cannot read it either.
- :func:`tampering`: code that reaches into what grading relies on: rebinding attributes of modules (the checks,
  otter, torch, builtins), the grader's own modules, code objects and frames, ``exec``/``eval``/``__import__``,
  profiler hooks, classes that redefine comparison or conversion (``__eq__`` tricks).

Honest homework uses none of these. IPython syntax (``%magic``, ``!shell``) is translated before parsing; a cell
that does not parse is skipped (it fails when it runs, too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
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
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Calls that run or rebuild code the reader cannot see (a runner is opaque unless its code is a literal string).
RUNNERS = {"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"}
LOADERS = {"marshal.loads", "marshal.load", "pickle.loads", "pickle.load", "_pickle.loads", "_pickle.load",
           "dill.loads", "dill.load", "cloudpickle.loads", "cloudpickle.load"}
CODE_BUILDERS = {"types.CodeType", "types.FunctionType", "types.LambdaType"}
IMPORTERS = {"__import__", "builtins.__import__", "importlib.import_module", "importlib.__import__"}
DECODERS = {"zlib.decompress", "bz2.decompress", "lzma.decompress", "gzip.decompress", "codecs.decode",
            "bytes.fromhex", "binascii.unhexlify", "binascii.a2b_base64", "binascii.a2b_hex"}


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


# ---------------------------------------------------------------- what an answer reaches


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and the nodes of its own scope: not the insides of the defs, classes and lambdas in it."""
    yield node
    for child in ast.iter_child_nodes(node):
        yield from (child,) if isinstance(child, (*SCOPES, ast.Lambda)) else _own_nodes(child)


def _import_bindings(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """What an import binds: ``import a.b as x`` -> {x: a.b}, ``import a.b`` -> {a: a}, ``from a import b`` -> {b: a.b}
    (relative and ``*`` imports bind nothing known)."""
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0] for a in node.names}
    if node.level or not node.module:
        return {}
    return {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if a.name != "*"}


def _qualified(node: ast.AST, names: Mapping[str, str | None]) -> str | None:
    """The dotted name an expression denotes (``F.unfold`` -> ``torch.nn.functional.unfold``), or None for an object
    only known at run time (a variable, a call's result).

    ``names`` maps a name to what it is bound to (None: a variable); a name it lacks stands for itself (a builtin, a
    module the set-up imported). ``getattr``, ``import_module`` and ``__import__`` of a literal name are followed.
    """
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, names)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[-1], ast.Constant) and isinstance(
            node.args[-1].value, str):
        func, literal = _qualified(node.func, names), node.args[-1].value
        if func == "getattr" and len(node.args) == 2:
            base = _qualified(node.args[0], names)
            return f"{base}.{literal}" if base else None
        if func in ("importlib.import_module", "__import__") and len(node.args) == 1:
            return literal if func == "importlib.import_module" else literal.split(".")[0]
    return None


def _global_names(trees: list[tuple[int, ast.Module]]) -> dict[str, str | None]:
    """What the notebook's top-level names are bound to: imports and aliases (``P = vit_edu.patchify``) by their
    object, variables, functions and classes None. A name bound both ways keeps its object: the scan errs towards
    a flag."""
    names: dict[str, str | None] = {}
    for _, tree in trees:
        for node in _own_nodes(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) or isinstance(node, SCOPES):
                names[node.id if isinstance(node, ast.Name) else node.name] = None
    for _, tree in trees:
        for node in _own_nodes(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= _import_bindings(node)
            elif isinstance(node, ast.Assign) and (value := _qualified(node.value, names)):
                names |= {t.id: value for t in node.targets if isinstance(t, ast.Name)}
    return names


def _local_names(node: ast.AST) -> dict[str, str | None]:
    """The names a definition or expression binds for itself: parameters, variables (None), imports (their object)."""
    names: dict[str, str | None] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.arg):
            names[n.arg] = None
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names[n.id] = None
        elif isinstance(n, (*SCOPES, ast.ExceptHandler)) and n is not node and n.name:
            names[n.name] = None
    for n in ast.walk(node):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= _import_bindings(n)
    return names


def _tail(reference: str) -> str:
    """A reference's name outside its module: from its class on (``EncoderBlock.forward``), else its last part."""
    parts = reference.split(".")
    first_class = next((i for i, part in enumerate(parts[1:], 1) if part[:1].isupper()), len(parts) - 1)
    return ".".join(parts[first_class:])


def _is_reference(qualified: str, reference: str) -> bool:
    """Whether ``qualified`` names ``reference`` or its re-export by a parent package (``vit_edu.patchify``)."""
    tail = _tail(reference)
    return qualified == reference or qualified.endswith(f".{tail}") and reference.startswith(qualified[:-len(tail)])


def _dynamic_owner(node: ast.AST, names: Mapping[str, str | None]) -> str | None:
    """The object whose attributes ``node`` looks up by a computed name (``getattr(m, 'a' + 'b')``, ``vars(m)``,
    ``m.__dict__``), where that object is known."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return _qualified(node.value, names)
    if isinstance(node, ast.Call) and node.args and _qualified(node.func, names) in ("getattr", "vars"):
        literal = len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
        return None if literal else _qualified(node.args[0], names)
    return None


def _unbound(node: ast.AST, names: Mapping[str, str | None]) -> str | None:
    """``a.b.c`` as written, where ``a`` is bound nowhere in the notebook (a ``*`` import, a set-up it lacks)."""
    if isinstance(node, ast.Attribute):
        base = _unbound(node.value, names)
        return f"{base}.{node.attr}" if base else None
    return node.id if isinstance(node, ast.Name) and node.id not in names else None


def _reach(node: ast.AST, names: Mapping[str, str | None], references: tuple[str, ...]) -> str | None:
    """How ``node`` reaches one of ``references``, in words: by name or alias, by a name bound nowhere that a module
    holding the reference exports, as the method of an object known only at run time (``x.unfold`` for
    ``torch.Tensor.unfold``), or by a dynamic look-up in a module that holds one."""
    qualified = _qualified(node, names) if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) else None
    for ref in references:
        if qualified and _is_reference(qualified, ref):
            written = ast.unparse(node)
            return f"uses {ref}" + ("" if written == ref else f" (as `{written}`)")
    chain = _unbound(node, names)
    for ref in references:
        parts = ref.split(".")
        if chain and any(_is_reference(".".join([*parts[:k], chain]), ref) for k in range(1, len(parts))):
            return f"uses `{chain}`, perhaps {ref} (no cell binds `{chain.split('.')[0]}` by name)"
    for ref in references:
        if (isinstance(node, ast.Attribute) and "." in _tail(ref) and node.attr == ref.rsplit(".", 1)[1]
                and _qualified(node.value, names) is None):
            return f"uses `.{node.attr}` of an object, perhaps {ref}"
    owner = _dynamic_owner(node, names)
    held = [ref for ref in references if owner and ref.startswith(f"{owner}.")]
    return f"has dynamic access to {owner} (`{ast.unparse(node)}`), which holds {held[0]}" if held else None


def _answer_nodes(tree: ast.Module, name: str) -> list[ast.AST]:
    """The definition of ``name`` (a ``def``) or the values assigned to it, at the cell's top level."""
    nodes: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            nodes.append(node)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            nodes.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            if node.value is not None:
                nodes.append(node.value)
    return nodes


def _searched(node: ast.AST) -> list[ast.AST]:
    """What of an answer runs: a def's body and defaults, not its annotations (``block: vit_edu.EncoderBlock``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*node.body, *(d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None)]
    return [node]


def _reaching(cell: int, answer: ast.AST, names: dict[str, str | None],
              helpers: dict[str, tuple[int, ast.FunctionDef | ast.AsyncFunctionDef]],
              references: tuple[str, ...]) -> Iterator[Finding]:
    """Where an answer, or a function of the notebook it calls (at any depth), reaches a reference."""
    todo, seen = [(cell, answer, "")], set()
    while todo:
        cell, node, via = todo.pop()
        local = _local_names(node)
        scope = {**names, **local}
        for part in _searched(node):
            for n in ast.walk(part):
                if what := _reach(n, scope, references):
                    yield Finding(cell, f"{what}{via}")
            called = {n.id for n in ast.walk(part) if isinstance(n, ast.Name) and n.id in helpers} - set(local) - seen
            seen |= called
            todo += [(*helpers[name], f" through `{name}`") for name in sorted(called)]


def reference_uses(nb: nbformat.NotebookNode, answers: dict[str, tuple[str, ...]],
                   references: dict[str, tuple[str, ...]]) -> dict[str, list[Finding]]:
    """Question -> the places where its answer reaches one of its references, for review (the references are gone
    from the question's process: reaching one earns nothing, and a flag is no verdict)."""
    trees = _trees(nb)
    names = _global_names(trees)
    helpers = {node.name: (i, node) for i, tree in trees for node in _own_nodes(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out: dict[str, list[Finding]] = {}
    for question, answer_names in answers.items():
        refs = tuple(references.get(question, ()))
        if not refs:
            continue
        for i, tree in trees:
            for name in answer_names:
                others = {k: v for k, v in helpers.items() if k != name}
                for answer in _answer_nodes(tree, name):
                    out.setdefault(question, []).extend(
                        Finding(f.cell, f"`{name}` {f.what}") for f in _reaching(i, answer, names, others, refs))
    return {q: list(dict.fromkeys(found)) for q, found in out.items() if found}


# ---------------------------------------------------------------- code that hides what it runs


def _opaque_call(callee: str, node: ast.Call) -> str | None:
    """Why a call hides the code it runs, or None."""
    first = node.args[0] if node.args else None
    literal = isinstance(first, ast.Constant) and isinstance(first.value, (str, bytes))
    if callee in RUNNERS and not literal:
        return f"{callee} of code computed at run time"
    if callee in LOADERS:
        return f"{callee}: code or objects rebuilt from bytes"
    if callee in CODE_BUILDERS or callee.endswith("__code__.replace"):
        return f"{callee}: a function or code object built from data"
    if callee in IMPORTERS and not literal:
        return f"{callee} of a computed name"
    return None


def _is_decoder(callee: str) -> bool:
    """Whether a call turns encoded or compressed data back into bytes (base64, zlib, codecs, hex)."""
    return callee in DECODERS or callee.startswith("base64.") and "decode" in callee


def opaque_code(source: str) -> list[str]:
    """The reasons an answer's code hides what it runs (``exec`` of a computed string, ``marshal.loads``, a code
    object built from data, a computed import), for review; [] for code that shows what it does."""
    tree = _parse(source)
    if tree is None:
        return []
    names: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= _import_bindings(node)
    calls = [(_qualified(n.func, names) or _dotted(n.func), n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    found = [(callee, why) for callee, node in calls if (why := _opaque_call(callee, node))]
    reasons = [why for _, why in found]
    if any(callee not in IMPORTERS for callee, _ in found):
        reasons += [f"{callee} decodes data that it runs" for callee, _ in calls if _is_decoder(callee)]
    return list(dict.fromkeys(reasons))
