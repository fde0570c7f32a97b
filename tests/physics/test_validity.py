"""Which splits exist at all: the serving engines' divisibility rules and the
platform's scale-up domain."""

from __future__ import annotations

from solver.physics.validity import refusals


def _why(build_deployment, *args, **kw):
    d, w, _ = build_deployment(*args, **kw)
    return refusals(d, w)


def test_tp_must_divide_attention_heads(build_deployment):
    why = _why(build_deployment, "llama-3.1-8b", "h100-sxm", tp=3, users=1, prompt=10, output=10)
    assert any("32 attention heads" in r for r in why)


def test_tp_larger_than_the_nvlink_domain_is_refused(build_deployment):
    why = _why(build_deployment, "llama-3.1-405b", "h100-sxm", tp=16, users=1, prompt=10, output=10)
    assert any("scale-up domain" in r and "8 GPUs" in r for r in why)
    # On an NVL72 rack the same TP=16 group fits in one NVLink domain.
    assert _why(build_deployment, "llama-3.1-405b", "gb200", tp=16, users=1, prompt=10, output=10, weights="fp8") == []


def test_tp_beyond_kv_heads_must_be_a_multiple_of_them(build_deployment):
    # phi-4: 40 heads, 10 KV heads. TP=4 divides the heads but not the KV heads.
    assert any("10 KV heads" in r for r in _why(build_deployment, "phi-4", "h100-sxm", tp=4, users=1, prompt=10, output=10))
    # Qwen2.5-7B: 28 heads, 4 KV heads. TP=14 divides 28 but is not a multiple of 4.
    why = _why(build_deployment, "qwen2.5-7b", "gb200", tp=14, users=1, prompt=10, output=10)
    assert any("not a multiple of them" in r for r in why)


def test_group_quantised_weights_need_whole_groups_per_gpu(build_deployment):
    # Qwen2.5-14B: MLP 13824 = 108 groups of 128. TP=8 leaves 1728 columns = 13.5 groups.
    why = _why(build_deployment, "qwen2.5-14b", "h100-sxm", tp=8, users=1, prompt=10, output=10, weights="int4-awq")
    assert any("group size 128" in r for r in why)
    assert _why(build_deployment, "qwen2.5-14b", "h100-sxm", tp=8, users=1, prompt=10, output=10) == []
    assert _why(build_deployment, "qwen2.5-14b", "h100-sxm", tp=4, users=1, prompt=10, output=10, weights="int4-awq") == []


def test_device_must_support_the_formats(build_deployment):
    why = _why(build_deployment, "llama-3.1-8b", "v100-32gb", users=1, prompt=10, output=10, weights="bf16", kv="fp16")
    assert any("cannot run bf16 weights" in r for r in why)


def test_context_must_fit_the_model(build_deployment):
    why = _why(build_deployment, "llama-3.1-8b", "h100-sxm", users=1, context=200_000, output=10)
    assert any("maximum 131072" in r for r in why)
