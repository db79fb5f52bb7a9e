"""Homework tooling: public feedback for students, and the instructor's grader.

- :mod:`~vit_edu.homework.feedback`: the public checks a student's ``grader.check`` cells run (no hidden input,
  no expected value beyond the public example).
- :mod:`~vit_edu.homework.cases`: how a hidden check is written: a *probe* that runs in the student's kernel and
  returns plain data, and a *judge* that compares that data with the reference in the grader's own process.
- :mod:`~vit_edu.homework.scan`: a static reading of a submission for calls of the reference and for tampering.
- :mod:`~vit_edu.homework.sandbox`: a Jupyter kernel inside a bubblewrap sandbox.
- :mod:`~vit_edu.homework.grade`: grading a folder of submissions into a CSV and one feedback file each.
- :mod:`~vit_edu.homework.build`: ``make homework``: student notebooks, autograder zips, the instructor's masters.

The hidden checks themselves live in ``book/homework/hidden/``, outside this package: students install the
package, never the hidden checks or the answer keys.
"""
