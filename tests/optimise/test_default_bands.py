"""Bands without a calibration: evaluate and solve give every TPOT, TTFT, throughput and
KV capacity its default P10–P90 band (catalogs/bands.yaml), and `sla: {at: pessimistic}`
plans at the band's slow edge."""

from __future__ import annotations

import json

import pytest
import yaml

from solver.catalog import default_catalog
from solver.cli.main import main
from solver.physics.evaluate import evaluate
from tests.conftest import build


def _pooled(metric):
    e = default_catalog().bands.metrics[metric].pooled
    return e.lo, e.hi


def test_evaluate_json_gives_each_figure_its_band(capsys):
    args = ["evaluate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--users", "8", "--prompt", "1024", "--output", "128", "--format", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    dec, pre, mem = out["decode"], out["prefill"], out["memory"]
    lo, hi = _pooled("tpot")  # 8 users: a batched step's band
    assert dec["tpot_band_s"] == pytest.approx([dec["tpot_s"] * lo, dec["tpot_s"] * hi])
    assert "fit points" in dec["tpot_band_from"]
    lo, hi = _pooled("ttft")
    assert pre["ttft_band_s"] == pytest.approx([pre["ttft_s"] * lo, pre["ttft_s"] * hi])
    load = pre["ttft_under_load_s"]
    assert pre["ttft_under_load_band_s"] == pytest.approx([load * lo, load * hi])
    lo, hi = _pooled("throughput")
    assert dec["tokens_per_s_band"] == pytest.approx([dec["tokens_per_s"] * lo, dec["tokens_per_s"] * hi])
    lo, hi = _pooled("kv")
    assert mem["kv_capacity_tokens_band"] == pytest.approx([mem["kv_capacity_tokens"] * lo, mem["kv_capacity_tokens"] * hi])


def test_one_user_takes_batch_one_band(capsys):
    assert (
        main(["evaluate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--users", "1", "--prompt", "512", "--output", "128", "--format", "json"])
        == 0
    )
    dec = json.loads(capsys.readouterr().out)["decode"]
    lo, hi = _pooled("tpot1")
    assert dec["tpot_band_s"] == pytest.approx([dec["tpot_s"] * lo, dec["tpot_s"] * hi])


def _edges():
    b = default_catalog().bands.metrics
    tpot = max(1.0, b["tpot1"].pooled.hi, b["tpot"].pooled.hi)
    return tpot, max(1.0, b["ttft"].pooled.hi)


def test_pessimistic_step_and_prompt_are_at_least_the_band_edge_slower():
    # At TP 1 every term of a step is a read (÷ efficiency), math (÷ utilisation) or a
    # fixed cost (× overhead): each grows by at least the TPOT edge (math by the larger
    # edge), so TPOT grows by at least it; a prompt by at least the TTFT edge where its
    # matmuls bind (compute-bound at 2,048 tokens).
    tpot_edge, ttft_edge = _edges()
    assert tpot_edge > 1 and ttft_edge > 1
    kw = dict(users=16, prompt=2048, output=256)
    nominal = evaluate(*build("llama-3.1-8b", "h100-sxm", **kw, sla={"max_tpot": "1s"}), with_remedies=False)
    edge = evaluate(*build("llama-3.1-8b", "h100-sxm", **kw, sla={"max_tpot": "1s", "at": "pessimistic"}), with_remedies=False)
    assert edge.estimates.decode.tpot_s >= nominal.estimates.decode.tpot_s * tpot_edge * (1 - 1e-9)
    assert edge.estimates.decode.tpot_s <= nominal.estimates.decode.tpot_s * max(tpot_edge, ttft_edge) * (1 + 1e-9)
    assert edge.estimates.prefill.ttft_s >= nominal.estimates.prefill.ttft_s * min(tpot_edge, ttft_edge) * (1 - 1e-9)


def test_pessimistic_plan_costs_at_least_the_nominal_and_meets_the_target_at_the_edge(tmp_path, capsys):
    spec = {
        "model": "llama-3.1-8b",
        "workload": {"users": 256, "context_tokens": 4096, "output_tokens": 256},
        "sla": {"max_tpot": "30ms"},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }
    sf = tmp_path / "s.yaml"
    sf.write_text(yaml.safe_dump(spec))
    assert main(["solve", str(sf), "--format", "json", "--no-explain"]) == 0
    nominal = json.loads(capsys.readouterr().out)["plan"]
    spec["sla"]["at"] = "pessimistic"
    sf.write_text(yaml.safe_dump(spec))
    assert main(["solve", str(sf), "--format", "json", "--no-explain"]) == 0
    edge = json.loads(capsys.readouterr().out)["plan"]
    assert edge["cost_usd_per_hour"] >= nominal["cost_usd_per_hour"]
    assert edge["batch_per_replica"] < nominal["batch_per_replica"]  # fewer users a replica at the slow edge
    # the edge plan's own shape at nominal factors, times the band's edge, meets the target
    tpot_edge, _ = _edges()
    d, w, t = build("llama-3.1-8b", "h100-sxm", users=edge["batch_per_replica"], context=4096, output=256, sla={"max_tpot": "30ms"})
    at_nominal = evaluate(d, w, t, with_remedies=False).estimates.decode.tpot_s
    assert at_nominal * tpot_edge <= 0.030
    assert nominal["tpot_band_s"] == pytest.approx([nominal["tpot_s"] * x for x in _pooled("tpot")])
