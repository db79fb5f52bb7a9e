"""Part V: the same tokens for other tasks. Each module is one task's model and its measurements.

* ``segmentation``: SETR, patch tokens back to a grid and up to a class per pixel (chapter 18);
* ``detection``: DETR's object queries and YOLOS's detection tokens, with Hungarian matching (chapter 19);
* ``video``: TimeSformer's space-time tokens and its three attentions over a clip (chapter 20).
"""
