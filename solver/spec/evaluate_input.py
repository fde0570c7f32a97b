"""The input of `plan-opt evaluate`, from a small YAML file and/or flags: pydantic at
the edge, resolved against the catalog into plain dataclasses for the physics.

    model: llama-3.1-8b            # catalog name, HF id, or a path to a config.json
    hardware: {gpu: rtx-4090, count: 1, tp: 1, pp: 1}
    precision: {weights: bf16, kv_cache: bf16}
    workload: {users: 16, context_tokens: 8192, prompt_tokens: 4096, output_tokens: 256}
    sla: {max_ttft: 2s, max_tpot: 50ms}
    overrides: {gpu: {...}, model: {...}, factors: {...}}
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, ValidationError, model_validator

from solver.catalog.types import USER_INPUT
from solver.errors import InputError
from solver.spec.fields import EngineField, EngineIn, HardwareIn, OverridesIn, PrecisionIn, SlaIn, SpecModel, SpeculativeIn, WorkloadIn


class EvaluateInput(SpecModel):
    model: str = Field(description="Catalog name, Hugging Face id, or path to a local config.json.")
    engine: EngineField = Field(default=EngineIn(), description="Serving engine: a name, or a mapping with its knobs.")
    speculative: SpeculativeIn | None = Field(default=None, description="Speculative decoding: method, draft, tokens drafted, acceptance.")
    hardware: HardwareIn
    precision: PrecisionIn = PrecisionIn()
    workload: WorkloadIn
    sla: SlaIn = SlaIn()
    overrides: OverridesIn = OverridesIn()

    @model_validator(mode="after")
    def _users(self) -> Self:
        if self.workload.requests_per_s is not None:
            raise ValueError("evaluate walks one configuration at a number of users; for a request rate use `plan-opt simulate` (or `solve`)")
        return self


def parse_input(data: object, lines: dict | None = None, source: str | None = None) -> EvaluateInput:
    if not isinstance(data, dict):
        raise InputError("input", None, "expected a YAML mapping with model, hardware and workload", source=source, line=1 if source else None)
    try:
        return EvaluateInput.model_validate(data, context=USER_INPUT)
    except ValidationError as exc:
        raise InputError.from_validation(
            exc, lines, source=source, schema=EvaluateInput, fields_hint="`plan-opt evaluate --help` lists an evaluate input's fields"
        ) from None
