"""Copied answers in a folder of submissions: pairs for the instructor to read, found by copydetect (MOSS's winnowing).

For each question, every submission's answer (the code of that question's cells, as one string) is compared with
the published solution and with every other submission's answer to the same question. :func:`find_copies` returns
the pairs that share most of their code; :func:`copies_report` writes them as Markdown. A pair is a reason to read
two answers side by side, never a verdict.

How an answer is compared:

- copydetect lexes the code with pygments and replaces every name by ``V`` (a defined function's name by ``F``),
  every string by ``S``, and drops whitespace and comments; it then hashes every run of ``noise_t`` characters of
  that filtered code (a k-gram) and keeps the hashes its winnowing window picks. Renamed variables, reworded
  comments, moved blank lines and reordered functions leave the hashes inside each function unchanged.
- The question's template (the ``def`` line, the docstring, ``...``) is in every answer, honest or not, and must not
  count. Lines of the answer equal to a template line (indentation aside) are dropped, and the rest is fingerprinted
  with the template's k-grams as copydetect's boilerplate, which also removes template text a student or a formatter
  re-wrapped. Both are needed: boilerplate removes only k-grams lying wholly inside the template, and the k-grams
  that run from the template's last line into an answer's first line match between any two answers that begin
  with a name (without the dropped lines, independent answers reached 0.44 instead of 0.36).
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
- ``min_tokens = 50``: an answer of one or two lines (a single ``return`` expression, a dict, ``F.unfold`` and a
  transpose) is written the same way by students working alone, so copying cannot be told from independent work.
  Answers with fewer than ``min_tokens`` of copydetect's tokens (characters of the filtered code, counted once the
  template is removed; ``return x.reshape(b, -1)`` has 15) are not compared at all, nor are unanswered ones.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from copydetect import CodeFingerprint, compare_files

SOLUTION = "published solution"
NOISE_T = 12
GUARANTEE_T = 12
THRESHOLD = 0.5
MIN_TOKENS = 50
REVIEW_NOTE = (
    "These pairs are for review, not automatic zeros: the similarity is the share of one answer's code (names, "
    "comments and the question's template ignored) that also appears in the other, and a shared idea written the "
    "natural way can look alike. Read both answers before deciding anything."
)


@dataclass(frozen=True)
class CopyPair:
    """Two answers to one question that share most of their code: what the instructor reads side by side."""

    question: str
    first: str  # a submission's name
    second: str  # another submission's name, or SOLUTION
    similarity: float  # 0..1: the larger share of either answer found in the other


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
        boilerplate = _template_hashes(template, noise_t)
        sources = [(name, answers[name][question]) for name in sorted(answers) if question in answers[name]]
        if question in solutions:
            sources.append((SOLUTION, solutions[question]))
        prints = [(name, _fingerprint(f"{name}: {question}", _without_template_lines(source, template), noise_t,
                                      guarantee_t, boilerplate)) for name, source in sources]
        prints = [(name, fp) for name, fp in prints if fp.token_coverage >= min_tokens]
        for (first, first_fp), (second, second_fp) in combinations(prints, 2):
            _, shares, _ = compare_files(first_fp, second_fp)
            similarity = float(max(shares))
            if similarity >= threshold:
                pairs.append(CopyPair(question, first, second, similarity))
    return sorted(pairs, key=lambda p: (-p.similarity, p.question, p.first, p.second))


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def copies_report(pairs: list[CopyPair]) -> str:
    """Markdown for the instructor: a table of the pairs, and the note that they are for review, not automatic zeros."""
    lines = ["## Possible copies", "", REVIEW_NOTE, ""]
    if not pairs:
        lines.append("No two answers to the same question reached the threshold.")
        return "\n".join(lines) + "\n"
    lines += ["| Question | Submission | Shares its code with | Similarity |", "| --- | --- | --- | ---: |"]
    lines += [f"| {_cell(p.question)} | {_cell(p.first)} | {_cell(p.second)} | {p.similarity:.0%} |" for p in pairs]
    return "\n".join(lines) + "\n"
