"""A copy of ``vit_edu`` without a question's reference implementations, for that question's grading process.

``strip_package(["vit_edu.patches.patchify", "vit_edu.block.EncoderBlock.forward"], dest)`` copies the package
and replaces the body of each named function, method or class (every method of it) by a ``raise``: the names
still import, so the rest of the package works, but the code that would answer the exercise is not there. The
grader binds the copy over the package inside the sandbox, so nothing in that process can reach the original,
not through an alias, a thread, a renamed code object or a copy of a source file read at run time.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import vit_edu

PACKAGE = Path(vit_edu.__file__).resolve().parent
REMOVED = "is not available while this question is graded: the exercise asks you to write it"


def _module_file(parts: list[str]) -> tuple[Path, list[str]]:
    """The source file of the longest module prefix of ``parts`` (without "vit_edu"), and the names left."""
    for i in range(len(parts), 0, -1):
        base = PACKAGE.joinpath(*parts[:i])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path, parts[i:]
    raise ValueError(f"no module of vit_edu for {'.'.join(['vit_edu', *parts])}")


def _raising(node: ast.FunctionDef | ast.AsyncFunctionDef, dotted: str) -> None:
    node.body = [ast.Raise(exc=ast.Call(func=ast.Name("NotImplementedError", ast.Load()),
                                        args=[ast.Constant(f"{dotted} {REMOVED}")], keywords=[]), cause=None)]


def _strip(tree: ast.Module, names: list[str], dotted: str) -> None:
    """Empty the function, method or class ``names`` (e.g. ["EncoderBlock", "forward"]) in ``tree``."""
    body: list[ast.stmt] = tree.body
    for depth, name in enumerate(names):
        found = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                 and n.name == name]
        if not found:
            raise ValueError(f"{dotted}: no definition of {name!r}")
        node = found[-1]
        if isinstance(node, ast.ClassDef) and depth < len(names) - 1:
            body = node.body
            continue
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    _raising(item, dotted)
        else:
            _raising(node, dotted)


def strip_package(references: list[str] | tuple[str, ...], dest: Path) -> Path:
    """Copy ``vit_edu`` to ``dest`` without the bodies of ``references`` (dotted names under ``vit_edu``)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    edits: dict[Path, list[tuple[list[str], str]]] = {}
    for dotted in references:
        parts = dotted.split(".")
        if parts[0] != "vit_edu":
            continue
        path, names = _module_file(parts[1:])
        edits.setdefault(path, []).append((names, dotted))
    for path, items in edits.items():
        tree = ast.parse(path.read_text())
        for names, dotted in items:
            _strip(tree, names, dotted)
        (dest / path.relative_to(PACKAGE)).write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n")
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest
