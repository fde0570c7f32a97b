"""`plan-opt calibrate`: fit a device's efficiency factors from the user's own
measurements, and write a calibration file the other commands accept.

The physics is linear in the factors' inverses, so each fit is least squares, not a
search. For TPOT there are two candidate fits over the bandwidth-bound points:

    scale  TPOT − rest = s · (the default's reads and fixed costs)            (one parameter)
    line   TPOT − rest = (bytes / bandwidth) · 1/e_bw + step_overhead        (two; the default's
                         per-layer, per-rank and per-sequence costs dropped)

(rest: communication and the math that does not hide under the reads). The scale keeps
the default model's shape, only stretched; the line replaces it. Which one, or neither,
is chosen by leave-one-out over the user's own points: each point predicted from a fit
to the others, the lowest mean error wins, the defaults on a tie. On the validation set's
test half, fitting the line on every engine and GPU made batch-1 TPOT 13.8 → 18.0 %
worse held out, the scale 13.8 → 11.1 % better (bench/bench_validation.py).

    TTFT − communication = (FLOPs / peak) · 1/e_compute                     (compute-bound)

Points whose decode is compute-bound at the uncalibrated factors are left out of
the TPOT fit (they say nothing about bandwidth). TPOT needs at least three points (to
hold one out and still fit two parameters), TTFT at least two; fewer is refused, with
the reason.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import yaml

from solver.catalog import Catalog, Factors
from solver.errors import InputError
from solver.physics.kernels import fixed_step_s
from solver.physics.prompt_queue import prompt_service_from_queued_s
from solver.physics.resolve import resolve
from solver.spec.evaluate_input import parse_input
from solver.spec.measurements import Measurement

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
    expert_layer_overhead_s: float
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
    notes: list[str] = field(default_factory=list)
    tpot_method: str = ""
    """The TPOT fit chosen ("scale", "line", or "defaults" when neither beat them held out)."""
    tpot_held_out: dict[str, float] = field(default_factory=dict)
    """Each candidate's mean held-out relative error over the TPOT points."""
    ttft_method: str = ""
    """The TTFT fit chosen ("utilisation", or "defaults")."""
    ttft_held_out: dict[str, float] = field(default_factory=dict)


def _evaluate(m: Measurement, catalog: Catalog, factors: Factors | None) -> Evaluation:
    data = {
        "model": m.model,
        "engine": m.engine,
        "hardware": {"gpu": m.gpu, "tp": m.tp, "pp": m.pp},
        "precision": {"weights": m.weights, "kv_cache": m.kv_cache},
        # isolated: the fit's lines (decode_xy, prefill_xy) take a step's reads and math and a
        # prompt's pass apart, with no prompt chunk in the step
        "workload": {"users": m.batch, "prompt_tokens": m.prompt_tokens, "output_tokens": m.output_tokens, "batching": "isolated"},
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
    share and KV bytes by attention's; the rest of the step that the fit leaves alone: communication) for a
    bandwidth-bound decode step; None when the step is compute-bound. compute_scale
    rescales the step's math (the default utilisation over the prefill fit's)."""
    dec = ev.estimates.decode
    c = dec.coefficients
    x = (dec.weight_bytes_read / dec.weight_bandwidth_share + dec.kv_bytes_read / c.attention_bandwidth_share) / dec.bandwidth_bytes_per_s
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


FIXED = ("step_overhead_s", "layer_overhead_s", "tp_rank_overhead_s", "sequence_overhead_s", "expert_layer_overhead_s")
"""The fixed costs of a step that the TPOT scale stretches with the reads."""
SCALE_RANGE = (0.1, 10.0)
"""A scale beyond these says the defaults do not describe the measured stack at all."""
TPOT_FITS = ("defaults", "scale", "line")
"""The candidates in order of preference on a tie: fewest parameters first."""


@dataclass(frozen=True)
class TpotRow:
    """A bandwidth-bound TPOT point as the fits see it."""

    read_s: float
    """Bytes read / peak bandwidth (the line's x)."""
    rest_s: float
    """What neither fit touches: communication and the math that does not hide."""
    default_s: float
    """The default factors' reads and fixed costs: their TPOT less the rest."""
    measured_s: float


def fit_scale(rows: list[TpotRow]) -> float | None:
    """s minimising Σ (s · default / (measured − rest) − 1)²: relative errors, so a long
    step does not outweigh a short one; None when no point has time beyond its rest."""
    a = [r.default_s / (r.measured_s - r.rest_s) for r in rows if r.measured_s > r.rest_s]
    if not a:
        return None
    return min(SCALE_RANGE[1], max(SCALE_RANGE[0], sum(a) / sum(v * v for v in a)))


def _line(rows: list[TpotRow]) -> FittedFactors | None:
    """The two-parameter line, or None where the sizes do not vary, the slope is not a
    physical efficiency (steps no longer than their rest), or a scale of the defaults
    describes the points (a scale inside SCALE_RANGE): the line only for a stack the
    default model's shape cannot stretch to. Why: on the validation set's fit half, each
    point predicted from a fit to the other points of its campaign, engine and GPU, the
    line was kept for 32 points and took them from 4.3 to 7.4 % (batch 1) and 7.4 to
    9.9 % (batched) against the defaults; gated so, the leave-one-out columns of
    `python bench/bench_validation.py --split fit` go batch-1 2.4 → 2.3 %, batched 8.1 →
    7.2 % (2026-12-03)."""
    if len({round(r.read_s, 12) for r in rows}) < 2:
        return None
    scale = fit_scale(rows)
    if scale is not None and SCALE_RANGE[0] < scale < SCALE_RANGE[1]:
        return None
    line = fit_decode([r.read_s for r in rows], [r.measured_s - r.rest_s for r in rows])
    return line if 0.01 <= line["bandwidth_efficiency"] <= 1.0 else None


def _tpot_predicted_s(method: str, fitted_on: list[TpotRow], r: TpotRow) -> float | None:
    if method == "defaults":
        return r.rest_s + r.default_s
    if method == "scale":
        s = fit_scale(fitted_on)
        return None if s is None else r.rest_s + s * r.default_s
    line = _line(fitted_on)
    return None if line is None else r.rest_s + r.read_s / line["bandwidth_efficiency"] + line["step_overhead_s"]


def choose_tpot_fit(rows: list[TpotRow]) -> tuple[str, dict[str, float]]:
    """The candidate with the lowest mean relative error on each point predicted from a
    fit to the others (leave-one-out), and every candidate's error; the defaults on a tie."""
    held_out: dict[str, float] = {}
    for method in TPOT_FITS:
        if method != "defaults" and _tpot_predicted_s(method, rows, rows[0]) is None:
            continue  # no fit on all the points, whatever the subsets allow
        errors = []
        for i, r in enumerate(rows):
            got = _tpot_predicted_s(method, rows[:i] + rows[i + 1 :], r)
            if got is None:
                break
            errors.append(abs(got - r.measured_s) / r.measured_s)
        else:
            held_out[method] = statistics.fmean(errors)
    best = min(held_out, key=lambda k: (round(held_out[k], 12), TPOT_FITS.index(k)))
    return best, held_out


def tpot_factors(method: str, rows: list[TpotRow], defaults: Factors) -> FittedFactors:
    """The chosen fit, over all the points, as factors: none for the defaults; for the
    scale the default's bandwidth efficiency over s and its fixed costs times s."""
    if method == "scale":
        s = fit_scale(rows)
        assert s is not None, "chosen only where it fits every held-out subset"
        out: FittedFactors = {"bandwidth_efficiency": min(1.0, defaults.bandwidth_efficiency / s)}
        for k in FIXED:
            out[k] = getattr(defaults, k) * s  # type: ignore[literal-required]
        return out
    if method == "line":
        line = _line(rows)
        assert line is not None, "chosen only where it fits"
        return line
    return {}


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
    """y = x / compute_efficiency through the origin (x: the prompt's compute time at
    full utilisation, y: measured TTFT less the rest, seconds), by least squares on the
    relative errors so a long prompt does not outweigh a short one; {} when no point has
    time beyond its rest."""
    a = [x / y for x, y in zip(xs, ys) if y > 0]
    if not a:
        return {}
    return {"compute_efficiency": max(0.01, min(1.0, sum(v * v for v in a) / sum(a)))}


TTFT_FITS = ("defaults", "utilisation")


def choose_ttft_fit(xs: list[float], ys: list[float], default_efficiency: float) -> tuple[str, dict[str, float]]:
    """The default utilisation or one fitted to the user's prompts, whichever predicts
    each point better from a fit to the others (mean relative error; the defaults on a
    tie): one odd prompt among few otherwise sets the utilisation of them all."""
    held_out: dict[str, float] = {}
    for method in TTFT_FITS:
        errors = []
        for i, (x, y) in enumerate(zip(xs, ys)):
            if y <= 0:
                continue
            c = default_efficiency if method == "defaults" else fit_prefill(xs[:i] + xs[i + 1 :], ys[:i] + ys[i + 1 :]).get("compute_efficiency")
            if c is None:
                break
            errors.append(abs(x / c - y) / y)
        else:
            if errors:
                held_out[method] = statistics.fmean(errors)
    if not held_out:
        return "defaults", {}
    return min(held_out, key=lambda k: (round(held_out[k], 12), TTFT_FITS.index(k))), held_out


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
            f.refused, f.notes = [], []
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
    rows = []
    for m, ev in zip(ms, evs):
        if m.tpot_s is None or not ev.valid:
            continue
        xy, at_default = decode_xy(ev, compute_scale), decode_xy(ev)
        if xy is None or at_default is None:
            continue
        rows.append(TpotRow(xy[0], xy[1], ev.estimates.decode.tpot_s - at_default[1], m.tpot_s))
    f.tpot_points = len(rows)
    changes: FittedFactors = {}
    if len(rows) >= MIN_TPOT_POINTS:
        f.tpot_method, f.tpot_held_out = choose_tpot_fit(rows)
        changes.update(tpot_factors(f.tpot_method, rows, evs[0].deployment.factors))
        if f.tpot_method == "scale" and fit_scale(rows) in SCALE_RANGE:
            f.notes.append(f"TPOT: the scale stops at its bound ({fit_scale(rows):g}); the default model does not describe these steps")
    elif rows:
        f.refused.append(f"TPOT: {len(rows)} bandwidth-bound point(s); at least {MIN_TPOT_POINTS} needed to fit one and check it on the others")
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
        fixed_changes: dict[str, Any] = {k: v for k, v in changes.items() if k in FIXED}
        if fixed_changes:  # the decode fit's fixed cost replaces the default's
            fitted = ev.deployment.replace(factors=dataclasses.replace(ev.deployment.factors, **fixed_changes))
            fixed += fixed_step_s(fitted) - ev.estimates.prefill.step_overhead_s
        xs.append(xy[0])
        ys.append(_one_prompt_s(m, ev) - fixed)
    f.ttft_points = len(xs)
    if len(xs) >= MIN_TTFT_POINTS:
        f.ttft_method, f.ttft_held_out = choose_ttft_fit(xs, ys, evs[0].deployment.factors.compute_efficiency)
        if f.ttft_method == "utilisation":
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
            **({"tpot_fit": f.tpot_method} if f.tpot_method else {}),
            **({"ttft_fit": f.ttft_method} if f.ttft_method else {}),
            "residuals": f.after,
            "source": source,
            "as_of": dt.date.today().isoformat(),
        }
        for f in fits
        if f.factors
    ]
    return yaml.safe_dump({"compute_basis": "matmul_rate", "calibration": entries}, sort_keys=False)
