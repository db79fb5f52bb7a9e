"""Copied answers in a folder of submissions: pairs for the instructor to read, never a verdict.

For each question, every submission's answer (the code of that question's cells, as one string) is compared with
the published solution and with every other submission's answer to the same question. :func:`find_copies` returns
the pairs that share most of their code; :func:`copies_report` writes them as Markdown. A pair is a reason to read
two answers side by side, never a verdict. Each pair says how it was found:

- ``same code up to names``: the two answers' syntax trees are equal once normalised (below), however short.
- ``shared code``: copydetect (MOSS's winnowing) finds most of one answer in the other.
- ``opaque code``: both answers hide what they run (:func:`vit_edu.homework.scan.opaque_code`: ``exec`` of a
  computed string, ``marshal.loads``...) and carry the same payload, a string or bytes literal of at least
  ``PAYLOAD_CHARS`` characters that is not the template's. Such answers are compared on nothing else: their code
  is a wrapper everyone writes alike. One opaque answer alone is grade.py's flag, not a pair.

How an answer is normalised: IPython syntax is translated (:func:`~vit_edu.homework.scan.python_source`), the code
parsed, every name it binds or reads (builtins aside; attributes and keywords kept) renamed ``v0``, ``v1``... by
first occurrence, docstrings, comments, ``...`` and ``pass`` dropped, and the tree written back as code, which also
writes constants one way (``1e3`` and ``1000.0``, ``'a'`` and ``"a"``). An answer that does not parse is compared
as written. Two kinds of answer are never compared: one whose normalised code equals the template's (unanswered:
the template handed back, with a comment, re-wrapped, or ``pass``), and one that only assigns literals (a by-hand
list, a letter: everyone who is right writes the same ``toy_tokens = [[1, 5], ...]``).

How copydetect compares two answers, as written (on the normalised code, which is shorter, every edit weighs more:
the edited copies below fell from 0.70 and 0.89 to 0.64 and 0.77, the independent answers stayed at 0.35):

- it lexes the code with pygments and replaces every name by ``V`` (a defined function's name by ``F``),
  every string by ``S``, and drops whitespace and comments; it then hashes every run of ``noise_t`` characters of
  that filtered code (a k-gram) and keeps the hashes its winnowing window picks. Renamed variables, reworded
  comments, moved blank lines and reordered functions leave the hashes inside each function unchanged.
- The question's template (the ``def`` line, the docstring, ``...``) is in every answer, honest or not, and must not
  count. Lines of the answer equal to a template line (indentation aside) are dropped, and the rest is fingerprinted
  with the template's k-grams as copydetect's boilerplate, which also removes template text a student or a formatter
  re-wrapped. Both are needed: boilerplate removes only k-grams lying wholly inside the template, and the
  k-grams that run from the template's last line into an answer's first line match between any two answers that
  begin with a name (without the dropped lines, independent answers reached 0.44 instead of 0.36).
- Similarity is the larger of copydetect's two fractions, the share of each answer's code found in the other: a
  copy of the solution padded with asserts and a print keeps its copied share at 1.0, while the smaller fraction
  falls with every line added (0.49 for that copy).

The parameters, measured on the answers in ``tests/copies_data`` (three questions, 2 to 16 lines of PyTorch each:
copies of the solution and of another student, renamed, reordered, edited or padded, next to independent answers
in other styles):

- ``noise_t = 12``: a k-gram is about half a line of filtered code (``V=V.V(0,2,4,1,3,5)`` is 18 characters).
  Shorter k-grams match idioms every answer shares, such as ``ifVisnotNone:V=V.V(`` (at 10, independent answers
  reached 0.46); longer ones lose copies edited line by line (at 15, a copy that chains the solution's reshape and
  permute and inlines a variable fell from 0.89 to 0.47).
- ``guarantee_t = noise_t``, a winnowing window of 1: every k-gram is kept. Winnowing shrinks the fingerprints of
  long files; an answer has about a hundred k-grams, and a window of 5 (``guarantee_t = 16``) lowered the edited
  and padded copies from 0.70-1.0 to 0.58-0.81.
- ``threshold = 0.5``, at least half of one answer found in the other: copies scored 0.70 to 1.0, independent
  answers at most 0.36.
- ``min_tokens = 50``: in an answer of one or two lines (a single ``return`` expression, ``F.unfold`` and a
  transpose) a few shared k-grams are most of the answer, so copydetect compares only answers with at least
  ``min_tokens`` of its tokens (characters of the filtered code, counted once the template is removed;
  ``return x.reshape(b, -1)`` has 15). Shorter answers are paired only when their normalised code is equal; students
  working alone often write a one-line answer the same way, which is why such a pair is for reading, not believing.
"""

from __future__ import annotations

import ast
import builtins
import io
import re
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from copydetect import CodeFingerprint, compare_files

from vit_edu.homework import scan

SOLUTION = "published solution"
NOISE_T = 12
GUARANTEE_T = 12
THRESHOLD = 0.5
MIN_TOKENS = 50
PAYLOAD_CHARS = 32
SAME, SHARED, OPAQUE = "same code up to names", "shared code", "opaque code"
BUILTINS = frozenset(dir(builtins))
# Characters Markdown gives a meaning anywhere in a line (emphasis, code, links, HTML, tables, entities, math).
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#!|~&$])")
REVIEW_NOTE = (
    f"These pairs are for review, not automatic zeros. *{SHARED}*: the similarity is the share of one answer's code "
    f"(names, comments and the question's template ignored) that also appears in the other. *{SAME}*: the two "
    "answers are one code once names, comments, docstrings and layout are ignored, as one-line answers written "
    f"alone often are. *{OPAQUE}*: both hide what they run behind the same encoded payload. A shared idea written "
    "the natural way can look alike: read both answers before deciding anything."
)


@dataclass(frozen=True)
class CopyPair:
    """Two answers to one question that share most of their code: what the instructor reads side by side."""

    question: str
    first: str  # a submission's name
    second: str  # another submission's name, or SOLUTION
    similarity: float  # 0..1: the larger share of either answer found in the other
    reason: str = SHARED  # how the pair was found: SAME, SHARED or OPAQUE


@dataclass(frozen=True)
class _Answer:
    """One answer as it is compared: as written, normalised, and the payload it hides (None where it hides nothing)."""

    name: str
    source: str
    code: str
    payload: frozenset[str | bytes] | None


class _Canonical(ast.NodeTransformer):
    """Renames every name an answer binds or reads (builtins aside) ``v0``, ``v1``... by first occurrence, and
    drops the statements that do nothing (docstrings, ``...``, ``pass``)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return name if name in BUILTINS else self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._name(node.arg)
        return self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> ast.alias:
        if node.name != "*":
            node.asname = self._name(node.asname or node.name.split(".")[0])
        return node

    def _named(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ExceptHandler) -> ast.AST:
        node.name = node.name and self._name(node.name)
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_ExceptHandler = _named

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> ast.AST:
        node.names = [self._name(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        return None if isinstance(node.value, ast.Constant) else self.generic_visit(node)

    def visit_Pass(self, node: ast.Pass) -> None:
        return None


def _parsed(source: str) -> ast.Module | None:
    """The answer's syntax tree (IPython syntax translated), or None where it does not parse."""
    try:
        return ast.parse(scan.python_source(source))
    except (SyntaxError, ValueError):
        return None


def _normalised(tree: ast.Module | None, source: str) -> str:
    """The code an answer runs, written one way (see the module's docstring); as written where it does not parse."""
    return source.strip() if tree is None else ast.unparse(_Canonical().visit(tree))


def _literal_only(tree: ast.Module) -> bool:
    """Whether an answer only assigns literals or names: the same for everyone who is right."""
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.Expr)):
            return False
        try:
            ast.literal_eval(node.value)
        except (ValueError, TypeError):  # not a literal; a literal dict with a list for a key
            if not isinstance(node.value, ast.Name):
                return False
    return True


def _payload(tree: ast.Module) -> frozenset[str | bytes]:
    """The long string and bytes literals of an answer: what an opaque answer decodes and runs."""
    return frozenset(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                     and isinstance(n.value, (str, bytes)) and len(n.value) >= PAYLOAD_CHARS)


def _answers(sources: list[tuple[str, str]], template: str) -> list[_Answer]:
    """The answers worth comparing: not the template handed back, not literals only."""
    template_tree = _parsed(template)
    unanswered = _normalised(template_tree, template)
    given = frozenset() if template_tree is None else _payload(template_tree)
    out = []
    for name, source in sources:
        tree = _parsed(source)
        code = _normalised(tree, source)  # normalises ``tree`` in place: a docstring is no payload
        if code == unanswered or tree is not None and _literal_only(tree):
            continue
        payload = _payload(tree) - given if tree is not None and scan.opaque_code(source) else None
        out.append(_Answer(name, source, code, payload))
    return out


def _fingerprint(name: str, source: str, noise_t: int, guarantee_t: int,
                 boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    """copydetect's fingerprint of Python source held in memory (``name`` only labels it)."""
    return CodeFingerprint(name, noise_t, guarantee_t - noise_t + 1, boilerplate=boilerplate, language="python",
                           fp=io.StringIO(source))


def _template_hashes(template: str, noise_t: int) -> np.ndarray:
    """Every k-gram hash of the template, as copydetect's ``CopyDetector`` builds its boilerplate."""
    hashes = _fingerprint("template", template, noise_t, noise_t).hashes
    return np.unique(np.array(list(hashes), dtype=np.int64))


def _without_template_lines(source: str, template: str) -> str:
    """The answer less the lines that repeat one of the template's lines (indentation aside)."""
    template_lines = {line.strip() for line in template.splitlines()} - {""}
    return "\n".join(line for line in source.splitlines() if line.strip() not in template_lines)


def _code_pairs(question: str, answers: list[_Answer], template: str, threshold: float, noise_t: int,
                guarantee_t: int, min_tokens: int) -> list[CopyPair]:
    """Pairs of readable answers: equal normalised code at any length, copydetect's share above ``min_tokens``."""
    boilerplate = _template_hashes(template, noise_t)
    prints = [(a, _fingerprint(f"{a.name}: {question}", _without_template_lines(a.source, template), noise_t,
                               guarantee_t, boilerplate)) for a in answers]
    pairs = []
    for (first, first_fp), (second, second_fp) in combinations(prints, 2):
        if first.code == second.code:
            pairs.append(CopyPair(question, first.name, second.name, 1.0, SAME))
        elif min(first_fp.token_coverage, second_fp.token_coverage) >= min_tokens:
            similarity = float(max(compare_files(first_fp, second_fp)[1]))
            if similarity >= threshold:
                pairs.append(CopyPair(question, first.name, second.name, similarity, SHARED))
    return pairs


def find_copies(answers: dict[str, dict[str, str]], solutions: dict[str, str], templates: dict[str, str] | None = None,
                *, threshold: float = THRESHOLD, noise_t: int = NOISE_T, guarantee_t: int = GUARANTEE_T,
                min_tokens: int = MIN_TOKENS) -> list[CopyPair]:
    """answers: submission -> question -> source. Pairs at or above threshold, most similar first.

    ``solutions`` and ``templates`` map a question to its published solution and its starter code; a question
    missing from either is compared without it. In a pair with the solution, the submission comes first.
    """
    templates = templates or {}
    questions = sorted(set(solutions) | {question for by_question in answers.values() for question in by_question})
    pairs = []
    for question in questions:
        template = templates.get(question, "")
        sources = [(name, answers[name][question]) for name in sorted(answers) if question in answers[name]]
        if question in solutions:
            sources.append((SOLUTION, solutions[question]))
        kept = _answers(sources, template)
        opaque = [a for a in kept if a.payload is not None]
        pairs += [CopyPair(question, a.name, b.name, 1.0, OPAQUE) for a, b in combinations(opaque, 2)
                  if a.payload & b.payload]
        pairs += _code_pairs(question, [a for a in kept if a.payload is None], template, threshold, noise_t,
                             guarantee_t, min_tokens)
    return sorted(pairs, key=lambda p: (-p.similarity, p.question, p.first, p.second))


def markdown_escape(text: str) -> str:
    """Text that Markdown shows as written, on one line, inside a sentence or a table cell (names come from
    students: ``|``, ``*``, ``_``, backticks, ``<``, ``[``, line breaks)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.splitlines()))


def copies_report(pairs: list[CopyPair]) -> str:
    """Markdown for the instructor: a table of the pairs, and the note that they are for review, not automatic zeros."""
    lines = ["## Possible copies", "", REVIEW_NOTE, ""]
    if not pairs:
        lines.append("No two answers to the same question reached the threshold.")
        return "\n".join(lines) + "\n"
    lines += ["| Question | Submission | Shares its code with | Similarity | Found as |",
              "| --- | --- | --- | ---: | --- |"]
    lines += [f"| {markdown_escape(p.question)} | {markdown_escape(p.first)} | {markdown_escape(p.second)} | "
              f"{p.similarity:.0%} | {markdown_escape(p.reason)} |" for p in pairs]
    return "\n".join(lines) + "\n"
