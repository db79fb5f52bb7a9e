"""The chapter 15 widget: every control value, the site's subset, and what the caption and the bars claim."""

import itertools
import re

import matplotlib.pyplot as plt
import pytest

from tests.conftest import assert_explains_problem, site_frame_count
from vit_edu.widgets.distill_explorer import (
    CONTROLS,
    SITE_CONTROLS,
    START,
    STUDENTS,
    TEACHER,
    distill_explorer_view,
    loss_terms,
)


def one_at_a_time():
    for name, values in CONTROLS.items():
        for value in values:
            yield {**START, name: value}


def check(settings):
    fig, caption = distill_explorer_view(**settings)
    try:
        terms = loss_terms(**settings)
        assert terms["total"] == pytest.approx(terms["label"] + terms["teacher"], abs=1e-6)
        label, teacher, sign, total = re.findall(
            r"Loss = ([\d.]+) \(labels\) \+ ([\d.]+) \(teacher\) ([=≈]) <b>([\d.]+)</b>", caption)[0]
        numbers = [float(label), float(teacher), float(total)]
        assert numbers == [round(terms[k], 3) for k in ("label", "teacher", "total")]
        # "=" only where the shown terms add up to the shown total (they need not: each is rounded on its own)
        assert (sign == "=") == (round(numbers[0] + numbers[1], 3) == numbers[2])
        assert f"τ = {settings['temperature']:g}, α = {settings['alpha']:g}, student: {settings['student']}" in caption
        left, right = fig.axes
        teacher, student = left.containers
        assert sum(b.get_height() for b in teacher) == pytest.approx(1.0, abs=1e-5)
        assert sum(b.get_height() for b in student) == pytest.approx(1.0, abs=1e-5)
        heights = [b.get_height() for b in right.containers[0]]
        assert heights == pytest.approx([terms["label"], terms["teacher"], terms["total"]], abs=1e-6)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("settings", list(one_at_a_time()), ids=str)
def test_every_control_value(settings):
    check(settings)


def test_every_combination_numbers():
    """The loss's terms behave as the chapter says, at every setting the live widget offers."""
    for tau, alpha in itertools.product(CONTROLS["temperature"], CONTROLS["alpha"]):
        agree = loss_terms(tau, alpha, "agrees with the teacher")
        assert agree["teacher"] == pytest.approx(0.0, abs=1e-6)  # no teacher term for a student equal to it
        if alpha == 0.0:
            assert all(loss_terms(tau, alpha, s)["teacher"] == 0.0 for s in STUDENTS)
        if alpha == 1.0:
            assert all(loss_terms(tau, alpha, s)["label"] == 0.0 for s in STUDENTS)
    # The ranking of the wrong classes matters more as τ grows: the teacher term of the student that gets the
    # class right but ranks the rest wrongly grows with τ.
    ranked = [loss_terms(tau, 0.5, "right class, rest ranked wrongly")["teacher"] for tau in CONTROLS["temperature"]]
    assert ranked == sorted(ranked) and ranked[0] < 0.01 < 1.0 < ranked[-1]


def test_site_player_is_a_small_subset_and_every_frame_draws():
    assert site_frame_count(SITE_CONTROLS, CONTROLS) <= 18
    assert all(len(values) >= 2 for values in SITE_CONTROLS.values())  # every control can move on the site
    assert 0.1 in SITE_CONTROLS["alpha"]  # DeiT's soft-distillation weight
    assert all(START[name] in CONTROLS[name] for name in CONTROLS)
    assert set(SITE_CONTROLS["student"]) == set(STUDENTS)
    for combo in itertools.product(*SITE_CONTROLS.values()):
        check(dict(zip(SITE_CONTROLS, combo)))


def test_rounded_terms_that_do_not_add_up_get_an_approximate_sign():
    """At τ = 8 the rounded terms 0.046 + 1.309 miss the rounded total 1.354: the caption writes '≈', not '='."""
    _, caption = distill_explorer_view(8.0, 0.5, "right class, rest ranked wrongly")
    plt.close("all")
    assert "0.046 (labels) + 1.309 (teacher) ≈ <b>1.354</b>" in caption
    _, caption = distill_explorer_view(1.0, 0.5, "right class, rest ranked wrongly")
    plt.close("all")
    assert "0.046 (labels) + 0.127 (teacher) = <b>0.173</b>" in caption


def test_frames_are_deterministic():
    fig1, cap1 = distill_explorer_view(**START)
    fig2, cap2 = distill_explorer_view(**START)
    plt.close(fig1)
    plt.close(fig2)
    assert cap1 == cap2 and len(TEACHER) == 4


@pytest.mark.parametrize("bad", [{"temperature": 3.0}, {"temperature": 0}, {"alpha": 2}, {"student": "a cat"}])
def test_bad_settings_explain_themselves(bad):
    assert_explains_problem(distill_explorer_view(**{**START, **bad}), "temperature must", "alpha must",
                            "student must")


def test_live_widget_updates_picture_and_caption():
    from vit_edu.widgets import live

    box = live(distill_explorer_view, CONTROLS, start=START)
    controls, picture, caption, _note = box.children
    assert picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "τ = 2, α = 0.5" in caption.value
    first = picture.value
    by_name = {c.description: c for c in controls.children if getattr(c, "description", "")}
    assert {"temperature", "alpha", "student"} <= set(by_name)
    by_name["temperature"].value = 8.0
    assert "τ = 8" in caption.value and picture.value != first
    by_name["student"].value = "wrong class"
    assert "student: wrong class" in caption.value
