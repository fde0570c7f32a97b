"""SGLang's admission of a prompt (replica.py, EngineLimits.reserve_new_tokens): it keeps
KV for a share, new_token_ratio, of the outputs the running requests have still to make,
so that it seldom retracts (python/sglang/srt/managers/schedule_policy.py PrefillAdder,
schedule_batch.py ScheduleBatch.retract_decode, scheduler.py Scheduler.__init__ and
update_running_batch; v0.3-v0.4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.traffic.replica import Replica

# python/sglang/global_config.py: default_init_new_token_ratio 0.7,
# default_min_new_token_ratio_factor 0.14, default_new_token_ratio_decay_steps 600,
# retract_decode_steps 20 (schedule_conservativeness 1, its default)
RATIO_INIT = 0.7
RATIO_MIN = RATIO_INIT * 0.14
RATIO_DECAY = (RATIO_INIT - RATIO_MIN) / 600
"""new_token_ratio falls by this much a decode step, from RATIO_INIT to RATIO_MIN."""
RETRACT_STEPS = 20

_DECODE = 2
"""replica.py's state of a sequence that decodes (replica imports this module, so it is
repeated here; tests/traffic/test_schedulers.py's admission cases fail if they part)."""


def room_tokens(rep: Replica) -> float:
    """KV tokens a new request may take (its prompt and whole output must be fewer): the
    free ones less new_token_ratio of every running request's output still to come
    (PrefillAdder.__init__'s rem_total_tokens; an output over its 4,096-token clip is
    counted whole here). The ratio is the one set at decode step ratio_step, fallen since."""
    step = rep.step
    ratio = max(rep.ratio - (step - rep.ratio_step) * RATIO_DECAY, RATIO_MIN)
    left = rep.sum_finish - rep.decoders * step  # the decoders' (each: its completion step − step)
    for s in rep.prefilling:
        left += s.output - s.generated
    return rep.free * rep.block - ratio * left


def ratio_after_retraction(rep: Replica) -> float | None:
    """new_token_ratio after a retraction: the decoders' outputs made, plus RETRACT_STEPS
    each, over their outputs wanted, at most 1 (retract_decode); None with no decoder."""
    step, made, wanted = rep.step, 0, 0
    for s in rep.running.values():
        if s.state == _DECODE:
            made += s.generated + step - s.entered
            wanted += s.output
    return min(1.0, (made + RETRACT_STEPS * rep.decoders) / wanted) if wanted else None
