"""Which prefill GPUs a disaggregated plan may pair with a decode GPU: by default only
those of the same vendor (catalogs/devices.yaml `vendor`), since the KV cache each
prompt leaves on its prefill replica must be read by a decode replica of another build
of the engine when the vendors differ, and no engine is known to do that.

What the engines support (read 2026-12-05):
- vLLM's NIXL connector refuses a peer whose compatibility hash differs, and the hash
  holds the vLLM version and the attention backend's name
  (vllm-project/vllm vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py,
  compute_nixl_compatibility_hash, commit fe6adf39): a CUDA build (FLASH_ATTN,
  FLASHINFER) and a ROCm build (ROCm's own backends) do not agree. The hand-offs across
  device kinds that exist stage the KV through host memory for one named pair each, in
  plugins (Trainium prefill to NVIDIA decode, vllm-project/vllm-neuron PR #27, 2026-04;
  NVIDIA prefill to Qualcomm AI100 decode, qualcomm/vllm-qaic PR #121, open 2026-09).
- vllm-project/router's CI runs P/D with NIXL between NVIDIA GPUs and with MoRI-IO
  between AMD GPUs, never across (.buildkite/pipeline.yml, commit 06d8dc5a).
- SGLang: on AMD its P/D backends are mori and, since 2026-06, NIXL built with ROCm UCX,
  validated AMD to AMD (sgl-project/sglang PR #28348, 1P1D on MI35x); both sides must
  name the same --disaggregation-transfer-backend, and mooncake's GPUDirect path is
  NVIDIA's. No test or document pairs a CUDA prefill with a ROCm decode.
So a plan across vendors is refused unless the spec allows it
(search.allow_cross_vendor_kv: true), for users who have made such a hand-off work.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from solver.optimise.problem import Shape


class _HasShape(Protocol):
    @property
    def shape(self) -> Shape: ...


T = TypeVar("T", bound=_HasShape)


def kv_pairable(prefill_vendor: str, decode_vendor: str, allow_cross_vendor: bool) -> bool:
    """Whether a prefill pool on `prefill_vendor`'s GPUs may send its KV cache to a decode
    pool on `decode_vendor`'s."""
    return allow_cross_vendor or prefill_vendor == decode_vendor


def pairable_options(allow_cross_vendor: bool, decode: Shape, options: list[T]) -> list[T]:
    """The prefill options a decode pool of `decode` may pair with."""
    vendor = decode.deployment.device.vendor
    return [o for o in options if kv_pairable(o.shape.deployment.device.vendor, vendor, allow_cross_vendor)]
