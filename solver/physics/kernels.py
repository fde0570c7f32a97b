"""The pieces a forward pass is made of, shared by decode and prefill: which weight
bytes a pass over some tokens reads, at what share of the bandwidth, its FLOPs, and
its fixed costs."""

from __future__ import annotations

from functools import lru_cache

from solver.catalog import Model
from solver.physics.deployment import Deployment
from solver.physics.weights import input_embedding_bytes, loaded_group_weights_bytes, loaded_weights_bytes, sixteen_bit_bytes


def expert_hit_fraction(num_experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected share of an MoE layer's routed experts that at least one of `tokens`
    tokens is routed to, assuming uniform independent routing:
    1 − (1 − k/E)^tokens. One token touches k/E; a large batch touches them all."""
    if num_experts == 0:
        return 1.0
    return 1.0 - (1.0 - experts_per_token / num_experts) ** tokens


def busiest_expert_share(num_experts: int, experts_per_token: int, tokens: float, groups: int) -> float:
    """Under expert parallelism (the E routed experts dealt whole, E/g to each of g GPUs),
    the share of one GPU's experts that the busiest GPU's `tokens` reach: a MoE layer
    ends when its slowest GPU has read its experts (the combine waits for every GPU),
    so a step reads the most-loaded GPU's experts, not the mean. Each of a GPU's n = E/g
    experts is hit with the probability q of expert_hit_fraction, taken independently
    (a token's k experts are in truth distinct: within a few per cent of the exact deal
    either way, tests/physics/test_expert_parallel.py), and the expected largest of g
    Binomial(n, q) counts is Σ_{m<n} (1 − F(m)^g), F the binomial CDF. One group (TP:
    every expert split over every GPU) is the mean, q."""
    if groups <= 1 or num_experts == 0:
        return expert_hit_fraction(num_experts, experts_per_token, tokens)
    return _busiest_share(num_experts, experts_per_token, tokens, groups)


@lru_cache(maxsize=4096)
def _busiest_share(num_experts: int, experts_per_token: int, tokens: float, groups: int) -> float:
    """busiest_expert_share under expert parallelism, kept: a search probes the same batches."""
    q = expert_hit_fraction(num_experts, experts_per_token, tokens)
    if q >= 1.0:
        return q
    n = max(1, num_experts // groups)
    pmf = (1.0 - q) ** n
    cdf, expected_max = 0.0, 0.0
    for m in range(n):
        cdf += pmf
        expected_max += 1.0 - min(1.0, cdf) ** groups
        pmf *= (n - m) / (m + 1) * q / (1.0 - q)
    return expected_max / n


def expert_groups(d: Deployment) -> int:
    """GPUs the routed experts are dealt over whole (expert parallelism: tp of them), 1
    where tensor parallelism splits every expert over every GPU."""
    return d.tp if d.expert_parallel and d.model.is_moe else 1


def split_weight_bytes(d: Deployment) -> tuple[float, float]:
    """(bytes a step reads of everything but the routed experts, bytes of all routed
    experts), whole model, as the engine allocates them: the padding it adds around each
    GPU's expert slice is streamed with it (physics/padding.py). A checkpoint size given
    by the user is read whole."""
    m = d.model
    total = loaded_weights_bytes(d)
    if d.weights_bytes_override is not None:
        routed = total * m.routed_expert_params / m.total_params if m.is_moe else 0.0
        return total - routed, routed
    routed = loaded_group_weights_bytes(d)["experts"]
    return total - routed - input_embedding_bytes(m, d.weights), routed


def bandwidth_share(d: Deployment) -> float:
    """The share of a 16-bit GEMV's bandwidth the weight reads reach as a whole: the
    bytes a step reads in 16-bit at 1, the quantised ones at the format's share on this
    device's backend (Precision.bandwidth_share_on)."""
    share = d.weights.bandwidth_share_on(d.device.vendor, d.device.memory_kind)
    if share == 1.0 or d.weights_bytes_override is not None:
        return share
    m = d.model
    skip = () if m.tie_word_embeddings else ("embeddings",)
    groups = loaded_group_weights_bytes(d)
    read = sum(b for g, b in groups.items() if g not in skip)
    sixteen = sixteen_bit_bytes(m, d.weights, skip)
    return read / (sixteen + (read - sixteen) / share)


def touched_weight_bytes(d: Deployment, tokens: int) -> float:
    """Whole-model weight bytes one forward pass over `tokens` tokens reads (under
    expert parallelism, g times the busiest GPU's experts)."""
    dense, routed = split_weight_bytes(d)
    m = d.model
    if not m.is_moe:
        return dense
    return dense + routed * busiest_expert_share(m.num_experts, m.experts_per_token, tokens, expert_groups(d))


def overlaps(d: Deployment) -> bool:
    """Whether the engine's kernels overlap their memory reads with their compute."""
    return d.engine is None or d.engine.overlaps_memory_and_compute


def kernel_time_s(memory_s: float, compute_s: float, overlapped: bool, unhidden_share: float) -> float:
    """A kernel's time from its reads and its math: the longer, plus the share of the
    shorter that does not hide under it (Factors.unhidden_share); their sum where the
    engine does not overlap them."""
    if not overlapped:
        return memory_s + compute_s
    return max(memory_s, compute_s) + unhidden_share * min(memory_s, compute_s)


def fixed_step_s(d: Deployment) -> float:
    """A forward pass's fixed cost: once per pass, once per layer (every stage's), and
    once per TP rank beyond the first (the step handed to each rank's worker).

    Tried and not kept (issue 42, 2026-12-06; bench/fit_cv.py's held_out on the fit half's
    terms so changed, TPOT / TTFT / all / campaigns' medians, 5 folds seed 0; seed 1; one
    campaign out): as is, 9.1 / 15.4 / 11.3 / 11.7 %; 8.1 / 15.4 / 10.6 / 9.4 %; 7.7 / 13.6 /
    8.9 / 8.9 %.
    - An MLA layer counted (11 + 6) / 11 of a dense GQA layer's cost, for the six more
      launches of absorbed MLA (SGLang deepseek_v2.py forward_absorb: q_a and kv_a norms,
      q_b_proj, the W_UK and W_UV bmms, the rope part set apart): 9.1 / 15.4 / 11.1 / 11.6;
      8.7 / 15.4 / 10.6 / 9.7; 8.2 / 13.6 / 9.4 / 9.0 %. The fit half's DeepSeek-R1 steps
      are InferenceX's tuned launches (its benchmarks/dsr1_fp8_b200.sh: trtllm_mla attention,
      the flashinfer_trtllm MoE runner, all-reduce fused with the norm), which run fewer
      kernels; the test half's (the SGLang cookbook's bare `--tp 8`, TensorRT-LLM issue
      5929's trtllm-serve defaults) more: 9.16 ms against InferenceX's 7.18 on the same
      8×B200 at batch 1. What decides a layer's launches is the launch's flags, not inputs
      of plan-opt's yet.
    - No cost per MoE layer where the experts are MXFP4 (gpt-oss: vLLM's Mxfp4MoEMethod and
      SGLang run routing, activation and reduction inside flashinfer's or triton_kernels'
      MoE calls): 8.3 / 16.5 / 11.2 / 11.7; 10.5 / 15.9 / 11.8 / 12.3; 8.8 / 13.6 / 9.7 /
      9.6 %."""
    f, m = d.factors, d.model
    return f.step_overhead_s + f.layer_overhead_s * m.num_layers + f.expert_layer_overhead_s * m.moe_layers + f.tp_rank_overhead_s * (d.tp - 1)


def prefill_expert_overhead_s(d: Deployment, tokens: int) -> float:
    """A prefill pass's cost per routed expert its `tokens` reach in each MoE layer
    (Factors.prefill_expert_overhead_s): layers × experts × the share hit, once per pass
    whatever the TP size (every rank sets up its share of every expert)."""
    m = d.model
    if not m.is_moe or tokens <= 0:
        return 0.0
    return d.factors.prefill_expert_overhead_s * m.moe_layers * m.num_experts * expert_hit_fraction(m.num_experts, m.experts_per_token, tokens)


def attention_flops_per_token(d: Deployment, context_tokens: int) -> float:
    """Score and value FLOPs of one new token attending to `context_tokens` tokens,
    whole model: 2 matmuls × 2 FLOP per multiply-add × heads × head width × keys.
    MLA in absorbed form attends over the latent: width 2·kv_lora_rank + rope."""
    m = d.model
    if m.attention == "mla":
        assert m.kv_lora_rank is not None and m.qk_rope_head_dim is not None  # Model requires both for MLA
        width = 2 * m.kv_lora_rank + m.qk_rope_head_dim
        per_layer_key = 2 * m.num_attention_heads * width
    else:
        per_layer_key = 4 * m.num_attention_heads * m.head_dim
    keys = (m.num_layers - m.sliding_layers) * context_tokens
    if m.sliding_layers:
        assert m.sliding_window is not None  # Model requires it with sliding layers
        keys += m.sliding_layers * min(context_tokens, m.sliding_window)
    return per_layer_key * keys


def expert_imbalance(d: Deployment) -> float:
    """How much more routed work the busiest GPU gets than the mean: the factor under
    expert parallelism, 1 otherwise (TP splits every expert over every GPU evenly)."""
    return d.factors.expert_load_imbalance if d.expert_parallel else 1.0


def routed_active_params(m: Model) -> float:
    """The routed experts' parameters one token uses: k of E experts' worth."""
    if not m.is_moe:
        return 0.0
    return m.routed_expert_params * m.experts_per_token / m.num_experts


def linear_flops(active_params: float, prompt_tokens: int) -> float:
    return 2.0 * active_params * prompt_tokens


def attention_flops(d: Deployment, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Causal attention over the prompt, whole model; with `cached_tokens` of it in the
    prefix cache, only the later tokens' queries (each still attends to every key
    before it, the cached ones included)."""
    if cached_tokens:
        return attention_flops(d, prompt_tokens) - attention_flops(d, cached_tokens)
    m = d.model
    p = prompt_tokens
    if m.attention == "mla":
        # Prefill runs MLA un-absorbed: per head, Q·K over qk (nope + rope) width and
        # P·V over v width.
        width = m.head_dim + (m.v_head_dim or m.head_dim)
    else:
        width = 2 * m.head_dim
    per_key = 2 * m.num_attention_heads * width  # 2 FLOP per multiply-add
    full_pairs = p * (p + 1) / 2
    pairs = (m.num_layers - m.sliding_layers) * full_pairs
    if m.sliding_layers:
        assert m.sliding_window is not None  # Model requires it with sliding layers
        w = min(p, m.sliding_window)
        # token i attends to min(i, w) keys: w(w+1)/2 for the first w, then w each.
        window_pairs = w * (w + 1) / 2 + (p - w) * w
        pairs += m.sliding_layers * window_pairs
    return per_key * pairs
