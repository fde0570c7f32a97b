"""`plan-opt calibrate`: fit a device's efficiency factors from the user's own
measurements, and write a calibration file the other commands accept.

The physics is linear in the factors' inverses, so the fit is least squares, not a
search:

    TPOT − communication = (bytes / bandwidth) · 1/e_bw + step_overhead      (bandwidth-bound)
    TTFT − communication = (FLOPs / peak) · 1/e_compute                     (compute-bound)

Points whose decode is compute-bound at the uncalibrated factors are left out of
the TPOT fit (they say nothing about bandwidth). Two parameters need at least three
points, one at least two; fewer is refused, with the reason.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

import yaml

from solver.catalog import Catalog, Factors
from solver.errors import InputError
from solver.physics.decode import prompt_service_from_queued_s
from solver.spec.evaluate_input import parse_input
from solver.spec.measurements import Measurement
from solver.spec.resolve import resolve

if TYPE_CHECKING:
    from solver.physics.evaluate import Evaluation

MIN_TPOT_POINTS = 3
MIN_TTFT_POINTS = 2


class FittedFactors(TypedDict, total=False):
    """The factors a fit sets (those it leaves out keep the catalog's value)."""

    bandwidth_efficiency: float
    step_overhead_s: float
    layer_overhead_s: float
    tp_rank_overhead_s: float
    sequence_overhead_s: float
    compute_efficiency: float


@dataclass
class Fit:
    gpu: str
    engine: str
    factors: FittedFactors
    tpot_points: int
    ttft_points: int
    before: dict[str, dict[str, float]] = field(default_factory=dict)
    after: dict[str, dict[str, float]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def _evaluate(m: Measurement, catalog: Catalog, factors: Factors | None) -> Evaluation:
    data = {
        "model": m.model,
        "engine": m.engine,
        "hardware": {"gpu": m.gpu, "tp": m.tp, "pp": m.pp},
        "precision": {"weights": m.weights, "kv_cache": m.kv_cache},
        "workload": {"users": m.batch, "prompt_tokens": m.prompt_tokens, "output_tokens": m.output_tokens},
    }
    try:
        d, w, t = resolve(parse_input(data), catalog)
    except InputError as exc:
        raise m.located(exc) from None
    if factors is not None:
        d = d.replace(factors=factors)
    from solver.physics.evaluate import evaluate

    return evaluate(d, w, t, with_remedies=False)


def _ape(pred: float, meas: float) -> float:
    return abs(pred - meas) / meas


def decode_xy(ev: Evaluation, compute_scale: float = 1.0) -> tuple[float, float] | None:
    """(bytes read / peak bandwidth, with quantised bytes weighted by their kernels'
    share; the rest of the step that the fit leaves alone: communication) for a
    bandwidth-bound decode step; None when the step is compute-bound. compute_scale
    rescales the step's math (the default utilisation over the prefill fit's)."""
    dec = ev.estimates.decode
    c = dec.coefficients
    x = (dec.weight_bytes_read / dec.weight_bandwidth_share + dec.kv_bytes_read) / dec.bandwidth_bytes_per_s
    math_s = c.compute_time_s(dec.batch) * compute_scale
    if not c.overlapped:  # the kernels add their compute to their reads: leave it in the rest
        return x, dec.comm_time_s + math_s
    if dec.bound != "bandwidth":
        return None
    return x, dec.comm_time_s + c.unhidden_share * math_s  # the math that does not hide


def prefill_xy(ev: Evaluation, read_scale: float = 1.0) -> tuple[float, float] | None:
    """(the prefill's compute time at full utilisation, its communication, fixed cost
    and the weights read that does not hide) for a compute-bound prefill; None when it
    is bound by reading the weights. read_scale rescales that read (the decode fit's
    bandwidth efficiency in place of the default's)."""
    pre = ev.estimates.prefill
    rest = pre.comm_time_s + pre.step_overhead_s + pre.expert_overhead_s + pre.request_overhead_s
    read_s = pre.weights_time_s * read_scale
    if not pre.overlapped:  # the matmuls add the weight read to their FLOPs
        return pre.compute_time_s * ev.deployment.factors.compute_efficiency, rest + read_s
    if pre.bound != "compute":
        return None
    return pre.compute_time_s * ev.deployment.factors.compute_efficiency, rest + pre.unhidden_share * read_s


def fit_decode(xs: list[float], ys: list[float]) -> FittedFactors:
    """y = x / bandwidth_efficiency + step_overhead, by least squares (x: bytes read /
    peak bandwidth, y: measured TPOT less communication, seconds). Falls back to one
    parameter through the origin when two are unphysical or the sizes do not vary."""
    if len(xs) >= 3 and len({round(x, 12) for x in xs}) >= 2:
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        overhead = my - slope * mx
        if slope > 1 and overhead >= 0:
            return {
                "bandwidth_efficiency": min(1.0, 1 / slope),
                "step_overhead_s": overhead,
                "layer_overhead_s": 0.0,
                "tp_rank_overhead_s": 0.0,
                "sequence_overhead_s": 0.0,
            }
    slope = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    return {
        "bandwidth_efficiency": min(1.0, 1 / slope),
        "step_overhead_s": 0.0,
        "layer_overhead_s": 0.0,
        "tp_rank_overhead_s": 0.0,
        "sequence_overhead_s": 0.0,
    }


def _one_prompt_s(m: Measurement, ev: Evaluation) -> float:
    """A TTFT measured with `batch` users, less the prompts queued ahead of its own (the
    inverse of the physics' queue, its delay from the measured TPOT where there is one):
    one prompt's time on the GPUs plus the front end."""
    assert m.ttft_s is not None
    c = ev.estimates.decode.coefficients
    front = c.request_overhead_s
    tpot = m.tpot_s if m.tpot_s is not None else c.tpot_s(m.batch)
    delay = max(0, m.output_tokens - 1) * tpot + front
    return prompt_service_from_queued_s(m.ttft_s - front, m.batch, delay) + front


def fit_prefill(xs: list[float], ys: list[float]) -> FittedFactors:
    """y = x / compute_efficiency through the origin (x: FLOPs / (tp × peak), y:
    measured TTFT less communication, seconds)."""
    slope = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    return {"compute_efficiency": min(1.0, 1 / slope)}


def fit(measurements: list[Measurement], catalog: Catalog) -> list[Fit]:
    """One fit per (device, engine)."""
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in measurements:
        try:
            gpu = catalog.device(m.gpu).name
        except InputError as exc:
            raise m.located(exc.relabel("hardware.gpu")) from None
        groups.setdefault((gpu, m.engine), []).append(m)
    fits = []
    for (gpu, engine), ms in sorted(groups.items()):
        evs = [_evaluate(m, catalog, None) for m in ms]
        base = evs[0].deployment.factors
        f = Fit(gpu, engine, {}, 0, 0)
        changes: FittedFactors = {}
        # Twice: the decode steps' math (summed with their reads where the kernels do not
        # overlap them) is first timed at the default utilisation, then at the prefill fit's.
        for _ in range(2):
            c_fit = changes.get("compute_efficiency")
            f.refused = []
            changes = _fit_group(f, ms, evs, base.compute_efficiency / c_fit if c_fit else 1.0)
        f.factors = changes
        fitted = dataclasses.replace(base, **changes)
        f.before = _errors(ms, evs)
        f.after = _errors(ms, [_evaluate(m, catalog, fitted) for m in ms])
        fits.append(f)
    return fits


def _fit_group(f: Fit, ms: list[Measurement], evs: list[Evaluation], compute_scale: float) -> FittedFactors:
    """The decode fit (TPOT: bandwidth-bound points), then the prefill fit (TTFT:
    compute-bound prefills) with the decode fit's bandwidth and fixed cost in them."""
    # TPOT: bandwidth-bound points only.
    xs, ys = [], []
    for m, ev in zip(ms, evs):
        if m.tpot_s is None or not ev.valid:
            continue
        xy = decode_xy(ev, compute_scale)
        if xy is None:
            continue
        xs.append(xy[0])
        ys.append(m.tpot_s - xy[1])
    f.tpot_points = len(xs)
    changes: FittedFactors = {}
    if len(xs) >= MIN_TPOT_POINTS and len(set(round(x, 12) for x in xs)) >= 2:
        changes.update(fit_decode(xs, ys))
    elif xs:
        f.refused.append(
            f"TPOT: {len(xs)} bandwidth-bound point(s) with distinct sizes; at least {MIN_TPOT_POINTS} needed to fit efficiency and per-step overhead"
        )
    # TTFT: compute-bound prefill.
    xs, ys = [], []
    for m, ev in zip(ms, evs):
        if m.ttft_s is None or not ev.valid:
            continue
        e = changes.get("bandwidth_efficiency")
        xy = prefill_xy(ev, ev.deployment.factors.bandwidth_efficiency / e if e else 1.0)
        if xy is None:
            continue
        fixed = xy[1]
        if "step_overhead_s" in changes:  # the decode fit's fixed cost replaces the default's
            fixed += changes["step_overhead_s"] - ev.estimates.prefill.step_overhead_s
        xs.append(xy[0])
        ys.append(_one_prompt_s(m, ev) - fixed)
    f.ttft_points = len(xs)
    if len(xs) >= MIN_TTFT_POINTS:
        changes.update(fit_prefill(xs, ys))
    elif xs:
        f.refused.append(f"TTFT: {len(xs)} compute-bound point(s); at least {MIN_TTFT_POINTS} needed")
    return changes


def _estimated_and_measured(key: str, m: Measurement, ev: Evaluation) -> tuple[float, float | None]:
    """A valid evaluation's TPOT or TTFT, and the measurement's (None: not measured)."""
    if key == "tpot":
        return ev.estimates.decode.tpot_s, m.tpot_s
    ttft = ev.estimates.ttft_s
    return ttft, m.ttft_s


def _errors(ms: list[Measurement], evs: list[Evaluation]) -> dict[str, dict[str, float]]:
    out = {}
    for key in ("tpot", "ttft"):
        apes = []
        for m, ev in zip(ms, evs):
            if not ev.valid:
                continue
            estimated, measured = _estimated_and_measured(key, m, ev)
            if measured is not None:
                apes.append(_ape(estimated, measured))
        if apes:
            out[key] = {"median_ape": statistics.median(apes), "max_ape": max(apes), "points": len(apes)}
    return out


def calibration_yaml(fits: list[Fit], source: str) -> str:
    """The calibration file's text: each fitted device's factors and residuals."""
    entries = [
        {
            "gpu": f.gpu,
            "engine": f.engine,
            "factors": f.factors,
            "tpot_points": f.tpot_points,
            "ttft_points": f.ttft_points,
            "residuals": f.after,
            "source": source,
            "as_of": dt.date.today().isoformat(),
        }
        for f in fits
        if f.factors
    ]
    return yaml.safe_dump({"compute_basis": "matmul_rate", "calibration": entries}, sort_keys=False)
