"""The book's own tooling, not part of the model: what chapters use to show things (``source``, ``plotting``)
and what ``make`` runs to publish them (``launch``: the set-up cell of every notebook; ``lab_edition``: the
chapters for Jupyter Lab; ``export``: the ONNX model behind the "Try it" page)."""
