"""Public homework checks: what a student's ``grader.check`` cells run, one module per homework.

Each ``check_*(answer)`` runs the student's answer on the public example and raises ``AssertionError`` with a
message that says what was expected, what came out and, for the classic mistakes, which one it is. The hidden
checks, with other inputs and the points, live only in the instructor's build (``book/homework/hidden/``); they
judge with the same ``expect_*`` functions.
"""

from vit_edu.homework.feedback.hw1 import *  # noqa: F401,F403
from vit_edu.homework.feedback.hw2 import *  # noqa: F401,F403
from vit_edu.homework.feedback.hw3 import *  # noqa: F401,F403
from vit_edu.homework.feedback.hw4 import *  # noqa: F401,F403
