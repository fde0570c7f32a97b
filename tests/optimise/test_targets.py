"""One registry of the user's limits: every place that names a target reads it."""

from __future__ import annotations

from solver.optimise.model import Limits
from solver.optimise.targets import LABELS, TARGETS
from solver.spec.solve_spec import Spec


def test_every_target_has_a_spec_path_that_the_schema_holds():
    props = Spec.model_json_schema()
    defs = props["$defs"]
    for t in TARGETS.values():
        section, leaf = t.spec_path.split(".")
        ref = props["properties"][section].get("$ref", "").split("/")[-1]
        assert leaf in defs[ref]["properties"], t.spec_path
        assert LABELS[t.name] == t.label


def test_limits_round_in_the_safe_direction():
    # 49.9999 ms allows 49,999 µs (down, never up); $19.999/h allows 1,999 cents; 3.7 GPUs: 3.
    lim = Limits.of({"max_tpot": 0.0499999, "max_usd_per_hour": 19.999, "max_gpus": 3, "users": 7})
    assert (lim.max_tpot_us, lim.max_cost_cents, lim.max_gpus) == (49_999, 1_999, 3)
    assert lim.max_ttft_us is None  # a demand (users) sets no limit


def test_limits_relax_upward_demands_downward():
    assert {n for n, t in TARGETS.items() if not t.relaxes_upward} == {"users", "context_tokens"}
