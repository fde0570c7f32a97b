"""Request lengths of public benchmark datasets as the benchmark clients sample them
(catalogs/datasets.yaml): a published histogram of prompt tokens and the clients'
filter, which drops a pair outside its bounds rather than clipping it, so the lengths
a run draws are the dataset's conditioned on the bounds (not piled at them)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

from annotated_types import Ge, Gt, Le
from pydantic import TypeAdapter, ValidationError

from solver.catalog.load import catalog_dir
from solver.catalog.types import FORBID
from solver.catalog.yaml_lines import load_yaml_file
from solver.errors import InputError

Tokens = Annotated[int, Ge(1), Le(10_000_000)]


@dataclass(frozen=True)
class Bucket:
    __pydantic_config__ = FORBID
    upper_tokens: Tokens
    requests: Annotated[int, Ge(0), Le(10**12)]
    """Requests with at most `upper_tokens` (cumulative)."""


@dataclass(frozen=True)
class DatasetLengths:
    __pydantic_config__ = FORBID
    name: str
    description: str
    min_tokens: Tokens
    max_prompt_tokens: Tokens
    max_total_tokens: Tokens
    filter_source: str
    prompt_tokenizer: str
    prompt_requests: Annotated[int, Gt(0), Le(10**12)]
    prompt_buckets: tuple[Bucket, ...]
    prompt_source: str
    output_p99_over_mean: Annotated[float, Gt(1), Le(100)]
    output_source: str

    def __post_init__(self) -> None:
        b = self.prompt_buckets
        if not b or any(x.upper_tokens >= y.upper_tokens or x.requests > y.requests for x, y in zip(b, b[1:])):
            raise ValueError("prompt_buckets must rise in upper_tokens, with cumulative requests that never fall")
        if b[-1].requests != self.prompt_requests:
            raise ValueError(f"the last bucket holds {b[-1].requests} requests, not prompt_requests {self.prompt_requests}")
        if b[0].upper_tokens <= self.min_tokens or self.max_prompt_tokens <= self.min_tokens:
            raise ValueError("the buckets and the filter's maximum must lie above min_tokens")

    def prompt_cdf(self) -> tuple[tuple[float, float], ...]:
        """(tokens, share at or below) from min_tokens (share 0) to the filter's maximum
        (share 1): the buckets above the maximum are folded into the one that holds it,
        since the filter admits no longer prompt."""
        points = [(float(self.min_tokens), 0.0)]
        for x in self.prompt_buckets:
            top = min(x.upper_tokens, self.max_prompt_tokens)
            share = x.requests / self.prompt_requests
            if top > points[-1][0]:
                points.append((float(top), share))
            else:
                points[-1] = (points[-1][0], share)
            if top == self.max_prompt_tokens:
                break
        points[-1] = (points[-1][0], 1.0)
        return tuple(points)

    def prompt_quantile(self, share: float) -> float:
        """The prompt length at this share of requests, log-uniform within a bucket."""
        return _quantile(self.prompt_cdf(), share)

    def prompt_share(self, tokens: float) -> float:
        """The share of requests at or below `tokens` (the inverse of prompt_quantile)."""
        return _share(self.prompt_cdf(), tokens)

    def prompt_lengths(self, mean_tokens: float, high_tokens: int, count: int = 2000) -> tuple[int, ...]:
        """`count` prompt lengths at evenly spaced shares, their scale set so that their
        mean is `mean_tokens` (a run's tokenizer counts the same text in more or fewer
        tokens than the histogram's) and conditioned on the filter [min_tokens,
        high_tokens] at that scale, as the client drops what lies outside."""
        low = self.min_tokens
        high = min(high_tokens, self.max_prompt_tokens)
        if not low <= mean_tokens <= high:
            raise InputError("mean_tokens", mean_tokens, f"a mean prompt within the filter's [{low}, {high}] tokens")
        return _scaled_lengths(self.prompt_cdf(), low, high, float(mean_tokens), count)


def _quantile(points: tuple[tuple[float, float], ...], share: float) -> float:
    share = min(1.0, max(0.0, share))
    for (x0, c0), (x1, c1) in zip(points, points[1:]):
        if share <= c1 and c1 > c0:
            return x0 * (x1 / x0) ** ((share - c0) / (c1 - c0))
    return points[-1][0]


def _share(points: tuple[tuple[float, float], ...], tokens: float) -> float:
    if tokens <= points[0][0]:
        return 0.0
    for (x0, c0), (x1, c1) in zip(points, points[1:]):
        if tokens <= x1:
            return c0 + (c1 - c0) * math.log(tokens / x0) / math.log(x1 / x0)
    return 1.0


@lru_cache(maxsize=64)
def _scaled_lengths(points: tuple[tuple[float, float], ...], low: int, high: int, mean: float, count: int) -> tuple[int, ...]:
    """prompt_lengths' draws, bisecting on the scale (the mean rises with it); kept, as
    every seed of a run asks again."""
    unit = [_quantile(points, (i + 0.5) / count) for i in range(count)]

    def drawn(scale: float) -> list[int]:
        a, b = _share(points, low / scale), _share(points, high / scale)
        if (a, b) == (0.0, 1.0):  # nothing outside the filter at this scale
            return [min(high, max(low, round(scale * x))) for x in unit]
        return [min(high, max(low, round(scale * _quantile(points, a + (b - a) * (i + 0.5) / count)))) for i in range(count)]

    lo_scale, hi_scale = 1e-3, 1e3
    for _ in range(60):
        mid = math.sqrt(lo_scale * hi_scale)
        if sum(drawn(mid)) < mean * count:
            lo_scale = mid
        else:
            hi_scale = mid
    return tuple(drawn(math.sqrt(lo_scale * hi_scale)))


@dataclass(frozen=True)
class DatasetsFile:
    __pydantic_config__ = FORBID
    as_of: dt.date
    datasets: tuple[DatasetLengths, ...]


def load_dataset_lengths(name: str) -> DatasetLengths:
    """The catalog's entry for dataset `name`; a malformed file is refused naming it."""
    path = catalog_dir() / "datasets.yaml"
    data, _ = load_yaml_file(path)
    try:
        catalog = TypeAdapter(DatasetsFile).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(".".join(str(x) for x in first["loc"]), first.get("input"), first["msg"], source=str(path)) from None
    for d in catalog.datasets:
        if d.name == name:
            return d
    known = ", ".join(d.name for d in catalog.datasets)
    raise InputError("dataset", name, f"one of {known}", source=str(path))
