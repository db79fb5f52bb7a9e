"""Homework tooling: public checks for students, and the instructor's build and grader.

What students get is generic code and data, never a solution:

- :mod:`~vit_edu.homework.checks`: checks as data (inputs, the expected output, the classic mistakes' outputs and
  hints); runs an answer and compares. ``check(question, **answers)`` is the public check a student's test cell
  runs, on the examples in ``public/`` (:mod:`~vit_edu.homework.plain` is their encoding).

The instructor's side (``book/homework/hidden/<name>.py`` computes every example with the book's references;
:mod:`~vit_edu.homework.assignment` holds them and draws hidden inputs from the course's secret and the student):

- :mod:`~vit_edu.homework.build`: ``make homework``: student notebooks, the public examples, the Gradescope zips.
- :mod:`~vit_edu.homework.grade`: grading a folder (``make grade``; the zip's :mod:`~vit_edu.homework.gradescope`
  runs the same): after a self-check (:mod:`~vit_edu.homework.selfcheck`), each question in a process of its own
  (:mod:`~vit_edu.homework.harness`, in a package without its references, :mod:`~vit_edu.homework.strip`; served
  by :mod:`~vit_edu.homework.zygote`), judged outside; the whole notebook run for its outputs
  (:mod:`~vit_edu.homework.runner`); flags for review (:mod:`~vit_edu.homework.scan`); copies
  (:mod:`~vit_edu.homework.copies`).
- :mod:`~vit_edu.homework.sandbox`: bubblewrap from an allow-list, unprivileged even for a root grader, limits for
  the whole sandbox counted by the kernel where a cgroup can be had.
"""
