"""The traffic parts of a workload and an SLA (requests_per_s): request lengths that
vary, how arrivals cluster, latency targets at a percentile, and the rule that a rate
and percentiles go together."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal, Self

from pydantic import Discriminator, Field, Tag, model_validator

from solver.spec.quantities import CV, TOKENS, Cv, Latency, SpecModel, Tokens

if TYPE_CHECKING:
    from solver.spec.fields import SlaIn, WorkloadIn

Z_P99 = 2.3263478740408408
"""The standard normal's 99th percentile: a lognormal's P99 is exp(mu + Z_P99 × sigma)."""


def lognormal_sigma(mean: float, p99: float) -> float:
    """The sigma of the lognormal with this mean and P99: ln(p99/mean) = Z·σ − σ²/2,
    the smaller root (the larger one puts the P99 below the median). The spec's bound
    on the P99 and the traffic's draws read it here."""
    return Z_P99 - math.sqrt(Z_P99**2 - 2 * math.log(p99 / mean))


class LengthsIn(SpecModel):
    """Request lengths that vary: `{dist: lognormal, mean: 1000, p99: 6000}`,
    `{dist: exponential, mean: 300}`, `{dist: uniform, min: 100, max: 900}`; every draw
    is clipped to [min, max] (default 1 and the context)."""

    dist: Literal["fixed", "lognormal", "exponential", "uniform"] = Field(description="The shape of the lengths.")
    mean: Tokens | None = Field(default=None, description=f"Mean tokens, {TOKENS} (uniform: the middle of min and max).")
    p99: Tokens | None = Field(default=None, description=f"lognormal: the 99th percentile, {TOKENS}; above the mean, at most 14.9 × it.")
    min: Tokens | None = Field(default=None, description=f"Shortest draw, {TOKENS} (default 1).")
    max: Tokens | None = Field(default=None, description=f"Longest draw, {TOKENS} (default: what the context leaves).")

    @model_validator(mode="after")
    def _shape(self) -> Self:
        if self.dist == "uniform":
            if self.min is None or self.max is None:
                raise ValueError("a uniform length needs min and max")
            if self.mean is not None and self.mean * 2 != self.min + self.max:
                raise ValueError(f"a uniform length's mean is (min + max) / 2 = {(self.min + self.max) / 2:g}; leave mean out")
            self.mean = (self.min + self.max) // 2
        if self.mean is None:
            raise ValueError(f"a {self.dist} length needs its mean")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:,}) must not exceed max ({self.max:,})")
        if (self.min is not None and self.mean < self.min) or (self.max is not None and self.mean > self.max):
            raise ValueError("the mean must lie between min and max")
        if self.dist == "lognormal":
            if self.p99 is None:
                raise ValueError("a lognormal length needs its p99 (how far the long requests reach)")
            ratio = self.p99 / self.mean
            if not 1 < ratio < math.exp(Z_P99**2 / 2):
                raise ValueError(f"a lognormal's p99 must lie above its mean and below {math.exp(Z_P99**2 / 2):.1f} × it; got {ratio:.2f} ×")
        elif self.p99 is not None:
            raise ValueError(f"p99 sets a lognormal's spread; a {self.dist} length has none")
        return self


def _length_kind(v: object) -> str:
    return "length-distribution" if isinstance(v, dict | LengthsIn) else "length-tokens"


Length = Annotated[
    Annotated[Tokens, Tag("length-tokens")] | Annotated[LengthsIn, Tag("length-distribution")],
    Discriminator(_length_kind),
]
"""A length as tokens, or (a mapping) a distribution; an error names the branch the value took."""


class ArrivalIn(SpecModel):
    process: Literal["poisson", "gamma"] = Field(default="poisson", description="poisson: independent arrivals; gamma: gaps with the given cv.")
    cv: Cv = Field(default=1.0, description=f"Coefficient of variation of the gaps between arrivals, {CV}; 1 is Poisson, above 1 burstier.")

    @model_validator(mode="after")
    def _poisson(self) -> Self:
        if self.process == "poisson" and self.cv != 1.0:
            raise ValueError("Poisson arrivals have cv 1; write process: gamma for another cv")
        return self


def length_mean(v: int | LengthsIn | None) -> int | None:
    """The mean tokens of a length given as a number or a distribution."""
    return v.mean if isinstance(v, LengthsIn) else v


def longest_tokens(v: int | LengthsIn | None) -> int:
    """The longest length a draw may take, for the context it needs: a distribution's
    max, else a lognormal's P99.9 and an exponential's (7 × its mean), else the value."""
    if v is None:
        return 0
    if not isinstance(v, LengthsIn):
        return v
    assert v.mean is not None  # LengthsIn._shape fills it
    if v.max is not None:
        return v.max
    if v.dist == "lognormal":
        assert v.p99 is not None
        sigma = lognormal_sigma(v.mean, v.p99)
        mu = math.log(v.mean) - sigma**2 / 2
        return math.ceil(math.exp(mu + 3.0902 * sigma))  # P99.9
    if v.dist == "exponential":
        return math.ceil(v.mean * math.log(1000))  # P99.9
    return v.mean


class PercentileIn(SpecModel):
    """A latency target at one percentile of the requests: `{p99: 2s}`."""

    p50: Latency | None = None
    p90: Latency | None = None
    p95: Latency | None = None
    p99: Latency | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        given = [k for k in ("p50", "p90", "p95", "p99") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give one percentile (p50, p90, p95 or p99), not {len(given)}")
        return self

    @property
    def percentile(self) -> float:
        return next(float(k[1:]) for k in ("p50", "p90", "p95", "p99") if getattr(self, k) is not None)

    @property
    def limit_s(self) -> float:
        return next(v for k in ("p50", "p90", "p95", "p99") if (v := getattr(self, k)) is not None)


def traffic_mismatch(workload: WorkloadIn, sla: SlaIn) -> tuple[str, str] | None:
    """(field, what is wrong) when percentile targets and a rate do not go together:
    percentiles need a rate, and under a rate every limit names its percentile (the
    slowest of an unbounded stream of requests has no bound)."""
    traffic = workload.requests_per_s is not None
    percentiles = [k for k in ("ttft", "tpot", "e2e", "goodput") if getattr(sla, k) is not None]
    if not traffic and percentiles:
        return (
            f"sla.{percentiles[0]}",
            f"sla.{percentiles[0]} holds at a percentile of requests: give workload.requests_per_s (or use sla.max_ttft, sla.max_tpot)",
        )
    if traffic:
        for plain, pct in (("max_ttft", "ttft"), ("max_tpot", "tpot")):
            if getattr(sla, plain) is not None:
                return (
                    f"sla.{plain}",
                    f"under requests_per_s the slowest request has no bound; give sla.{pct} at a percentile, e.g. {pct}: {{p99: ...}}, instead of sla.{plain}",
                )
    return None


def check_traffic(workload: WorkloadIn, sla: SlaIn) -> None:
    """traffic_mismatch as a validation error (inside a pydantic validator)."""
    bad = traffic_mismatch(workload, sla)
    if bad:
        raise ValueError(bad[1])
