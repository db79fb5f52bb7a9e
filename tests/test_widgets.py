import matplotlib.pyplot as plt

from vit_edu.widgets import live

calls = []


def _view(size, mode):
    calls.append((size, mode))
    fig, ax = plt.subplots()
    return fig, f"{size}/{mode}"


def test_live_renders_once_then_on_every_change():
    calls.clear()
    box = live(_view, {"size": [8, 16, 32], "mode": ["a", "b"]}, start={"size": 16})
    controls, _picture, caption = box.children
    slider, menu = controls.children
    assert calls == [(16, "a")] and caption.value == "16/a"
    slider.value = 32
    menu.value = "b"
    assert calls[-1] == (32, "b") and caption.value == "32/b"
    assert type(slider).__name__ == "SelectionSlider" and type(menu).__name__ == "Dropdown"
