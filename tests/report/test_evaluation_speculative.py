"""The evaluation's speculative rows read the draft's cost from the estimate: its passes
and, for an EAGLE-3 head, the fc read once a round."""

from __future__ import annotations

from solver.physics.evaluate import evaluate
from solver.report.evaluation_text import render_text
from tests.physics.test_speculative import _with


def test_the_evaluation_names_the_fc_read_once_beside_the_passes():
    d, w, t = _with(None, 1, {"method": "eagle3", "num_tokens": 3})
    text = render_text(evaluate(d, w, t, with_remedies=False))
    # 748,699,904 B a pass and 100,663,296 B of fc, in GB (1e9)
    assert "3 passes of 0.75 GB" in text and "the fc once, 0.10 GB" in text
