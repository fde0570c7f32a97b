"""vLLM pads each GPU's MXFP4 expert matrices to its kernels' blocks before allocating
them, and the padded bytes are held and streamed like the weights (physics/padding.py,
catalogs/engines.yaml `moe_padding`).

The expected bytes are derived here by hand from gpt-oss's config.json sizes (hidden
2,880, expert intermediate 2,880; 120b: 36 layers × 128 experts, 20b: 24 × 32) and the
rounding rules of the source, not read back from the code:
- Ampere, Marlin (vllm fused_moe/oracle/mxfp4.py @ 001eda31e3d0): each GPU's
  intermediate I rounded up to 128, the hidden H to 256;
- Hopper, Triton (the same file: I to 64, H kept), then triton_kernels' Hopper value
  layout (hopper_value.py @ 000df03e481f): a matrix's reduced dimension to 128 FP4
  values (64 bytes), the other to 256. TensorRT-LLM PR #16125 names gpt-oss-120b's
  padded gate-up tensor on H100 at TP 1: (128, 1472, 5888), 1,472 bytes = 2,944 values.
MXFP4 stores 4 bits a value and one 8-bit scale per 32: 17/32 byte a value."""

from __future__ import annotations

import pytest

from solver.physics.decode import estimate_decode
from solver.physics.kernels import split_weight_bytes
from solver.physics.memory import estimate_memory
from solver.physics.weights import group_weights_bytes, per_gpu_weights_bytes

H = INTER = 2880
MXFP4_BYTES = 17 / 32
SHAPES = {"gpt-oss-120b": (36, 128), "gpt-oss-20b": (24, 32)}


def up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def padded_values(gpu: str, tp: int) -> int:
    """One expert's gate-up (2·I rows × H columns) plus down (H rows × I columns) values
    on one GPU, as the engine allocates them."""
    i = INTER // tp
    if gpu == "a100-80gb":  # Marlin
        i, h = up(i, 128), up(H, 256)
        return 2 * i * h + h * i
    i = up(i, 64)  # Triton: I to 64, then the layout: columns (reduced) to 128, rows to 256
    return up(2 * i, 256) * up(H, 128) + up(H, 256) * up(i, 128)


def test_hopper_tp1_allocates_the_tensor_tensorrt_llm_names(build_deployment):
    # gate-up (128 experts, 1472 bytes = 2,944 columns, 5,888 rows) at TP 1 on H100; the
    # down matrix by the same layout: 3,072 rows (2,880 to 256) by 2,944 columns
    from solver.physics.padding import expert_padding_factor

    d, _, _ = build_deployment("gpt-oss-120b", "h100-sxm", tp=1, prompt=512, output=128, weights="mxfp4", engine="vllm")
    assert expert_padding_factor(d) == pytest.approx((5888 * 2944 + 3072 * 2944) / (3 * 2880 * 2880))


@pytest.mark.parametrize("model", sorted(SHAPES))
@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-80gb"])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_each_gpu_holds_and_reads_the_padded_experts(build_deployment, model, gpu, tp):
    layers, experts = SHAPES[model]
    d, w, _ = build_deployment(model, gpu, tp=tp, users=1, prompt=512, output=128, weights="mxfp4", engine="vllm")
    padded_per_gpu = layers * experts * padded_values(gpu, tp) * MXFP4_BYTES
    groups = group_weights_bytes(d.model, d.weights)  # as the checkpoint stores them
    rest = sum(groups.values()) - groups["experts"]
    # the experts' biases (0.03 % of their bytes) are scaled with them: within 1e-3
    assert per_gpu_weights_bytes(d) == pytest.approx(rest / tp + padded_per_gpu, rel=1e-3)
    assert estimate_memory(d, w).weights_bytes == pytest.approx(rest / tp + padded_per_gpu, rel=1e-3)
    # what a step streams: the routed experts' bytes per GPU are the padded ones
    assert estimate_decode(d, w).coefficients.routed_weight_bytes == pytest.approx(padded_per_gpu, rel=1e-3)
    assert split_weight_bytes(d)[1] / tp == pytest.approx(padded_per_gpu, rel=1e-3)


def test_no_padding_where_the_engine_has_no_rule(build_deployment):
    # SGLang pads MXFP4 too (PR #9473) but no rule of its is in the catalog: the stored bytes
    d, _, _ = build_deployment("gpt-oss-120b", "h100-sxm", tp=1, prompt=512, output=128, weights="mxfp4", engine="sglang")
    assert per_gpu_weights_bytes(d) == pytest.approx(sum(group_weights_bytes(d.model, d.weights).values()))
    # a BF16 model under vLLM: no MXFP4 experts, nothing padded
    b, _, _ = build_deployment("llama-3.1-8b", "h100-sxm", tp=1, prompt=512, output=128, engine="vllm")
    assert per_gpu_weights_bytes(b) == pytest.approx(sum(group_weights_bytes(b.model, b.weights).values()))


def test_a_rule_naming_an_unknown_device_family_is_refused(catalog):
    import dataclasses

    e = catalog.engines.entries["vllm"]
    bad = dataclasses.replace(e.moe_padding[0], families=("hoppr",), devices=())
    with pytest.raises(ValueError, match="unknown device family 'hoppr'"):
        catalog._check_moe_padding(dataclasses.replace(e, moe_padding=(bad,)))
