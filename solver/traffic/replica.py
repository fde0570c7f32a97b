"""One replica of the simulator (simulate.py says the rules): its queue, its running
batch, its KV blocks and its clock, and the iteration that moves them.

Speed: this is the simulator's hot loop (about four events a request). State lives in
slots, helpers that ran once per event are written into the loop, and decoders are
aggregates (bulk.py advances decode-only stretches at once). Every float is computed
in the same order as the plain statement of the rules, so results are equal bit for
bit to the step-by-step reading (tests/traffic/test_event_sequence.py).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

from solver.traffic.admission import RATIO_INIT, RETRACT_STEPS, ratio_after_retraction, room_tokens
from solver.traffic.budget import Work
from solver.traffic.bulk import decode_in_bulk, stretch
from solver.traffic.types import EngineLimits, IterationCost, ReplicaStats, Request

_WAITING, _PREFILL, _DECODE, DONE = 0, 1, 2, 3
_INF = math.inf


class Seq:
    """One request's state in a replica. A decoder's length is implicit: at the
    replica's decode step D it has written base + D KV tokens and made
    generated + (D − entered) tokens."""

    __slots__ = (
        "request", "output", "state", "target", "computed", "blocks", "generated", "key", "base", "entered", "heap_id",
        "wait_since_s", "first_s", "finish_s", "preemptions", "replica",
    )  # fmt: skip
    key: int
    heap_id: int
    base: int
    entered: int
    replica: int
    wait_since_s: float

    def __init__(self, request: Request) -> None:
        # key, heap_id, base, entered, replica and wait_since_s are set before any read
        # (admission, decoding, arrival): left unset, as a request makes one of these.
        self.request = request
        self.target = request.prompt_tokens  # the prompt, or prompt + generated after a preemption
        self.output = request.output_tokens
        self.state = _WAITING
        self.computed = self.blocks = self.generated = self.preemptions = 0  # KV written and blocks held (while prefilling); tokens made
        self.first_s: float | None = None
        self.finish_s = math.nan


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def checked(seconds: float) -> float:
    """An iteration's cost, refused unless finite and not negative."""
    if not 0.0 <= seconds < _INF:
        raise ValueError(f"an iteration cost must be finite and not negative, got {seconds!r}")
    return seconds


class Replica:
    """One engine: its queue, its running batch, its KV blocks and its clock."""

    __slots__ = (
        "index", "work", "cost", "max_seqs", "budget", "block", "chunked", "separate", "steps", "window_left", "step_by_step",
        "free", "clock", "waiting", "running", "prefilling", "next_key", "step", "decoders", "sum_base", "by_offset", "heap",
        "heap_ids", "last_finished", "stats", "wait_area_s", "overlap", "incoming",
        "reserve", "ratio", "ratio_step", "sum_finish", "lines",
    )  # fmt: skip

    def __init__(self, index: int, cost: IterationCost, limits: EngineLimits, step_by_step: bool, work: Work) -> None:
        self.index = index
        self.work = work
        self.cost = cost.iteration_s
        lines = getattr(cost, "decode_lines", None)  # bulk.py: a decode-only iteration's lines, where the cost keeps them
        self.lines: dict[int, Callable[[int], float]] | None = lines if isinstance(lines, dict) else None
        self.max_seqs = limits.max_num_seqs
        self.budget = limits.max_num_batched_tokens
        self.block = limits.block_size_tokens
        self.chunked = limits.chunked_prefill
        self.separate = limits.prefill_schedule == "separate"
        self.steps = limits.scheduler_steps
        self.window_left = 0  # decode steps left in the multi-step window in flight
        self.step_by_step = step_by_step
        self.free = limits.kv_blocks
        self.clock = -math.inf
        self.waiting: deque[Seq] = deque()
        self.running: dict[int, Seq] = {}  # by admission, oldest first
        self.prefilling: list[Seq] = []  # running with their prompt not done, by admission
        self.next_key = 0
        # decoders, as aggregates
        self.step = 0  # decode steps taken: every decoder advances one token per step
        self.decoders = 0
        self.sum_base = 0
        self.by_offset = [0] * self.block  # decoders by base mod block: who needs a block at which step
        self.heap: list[tuple[int, int, Seq]] = []  # (step at which it finishes, id, seq)
        self.heap_ids = 0
        self.last_finished = 0  # requests that finished at the end of the last iteration (at self.clock)
        self.stats = ReplicaStats()
        self.wait_area_s = 0.0
        self.overlap = limits.overlap_schedule
        self.incoming: deque[Seq] = deque()  # overlap: arrived while the next batch was already chosen
        self.reserve = limits.reserve_new_tokens
        self.ratio, self.ratio_step = RATIO_INIT, 0  # SGLang's new_token_ratio as set at decode step ratio_step
        self.sum_finish = 0  # the decoders' completion steps, summed (their outputs to come: sum_finish − decoders × step)

    # --- arrivals and the queue

    def arrive(self, s: Seq, t: float) -> None:
        waiting = self.waiting
        if not waiting and not self.running:
            self.ratio, self.ratio_step = RATIO_INIT, self.step  # SGLang resets it when idle
            if t > self.clock:
                self.clock = t
        s.replica = self.index
        s.wait_since_s = t
        if self.overlap and (waiting or self.running):
            self.incoming.append(s)  # the iteration at self.clock was chosen before t
        else:
            waiting.append(s)
        stats, q = self.stats, len(waiting) + len(self.incoming)
        if q > stats.max_queue:
            stats.max_queue = q
        stats.queue_timeline.append((t, q))

    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    def in_system_at(self, t: float) -> int:
        """Requests routed here and not finished at `t` (the replica has run every
        iteration that starts before `t`; only the last may end after it)."""
        n = len(self.waiting) + len(self.running) + len(self.incoming)
        return n + self.last_finished if self.clock > t else n

    def advance(self, until: float) -> None:
        """Run every iteration that starts before `until`."""
        work, waiting, running = self.work, self.waiting, self.running
        events, check_at = work.events, work.next_check  # counted here, written back for each check and at the end
        while (waiting or running) and self.clock < until:
            events += 1
            if events >= check_at:
                work.events = events
                work.check()
                check_at = work.next_check
            k = stretch(self)
            if k:
                decode_in_bulk(self, k, until)
            else:
                self._iteration()
        work.events = events

    def quiet_until(self) -> float:
        """A time before which the requests in this replica cannot change unless one
        arrives here: the end of its decode-only stretch (a little early, against
        rounding), else its clock. JSQ advances a replica only from then on."""
        if self.last_finished or not (self.waiting or self.running):
            return self.clock
        k = stretch(self)
        if not k:
            return self.clock
        n = self.decoders
        ctx0 = self.sum_base + n * (self.step + 1)
        span = k * (checked(self.cost(n, ctx0, 0, 0.0)) + checked(self.cost(n, ctx0 + (k - 1) * n, 0, 0.0))) / 2
        return self.clock + span * (1 - 1e-6) - abs(self.clock) * 1e-12

    # --- sequences entering and leaving

    def _stop_decoding(self, s: Seq) -> None:
        """A decoder leaves the batch: its blocks are freed and its tokens made real."""
        self.free += _ceil_div(s.base + self.step, self.block)
        self.sum_finish -= s.entered + s.output - s.generated
        self.decoders -= 1
        self.sum_base -= s.base
        self.by_offset[s.base % self.block] -= 1
        s.generated += self.step - s.entered
        s.heap_id = -1

    def _preempt_last(self, t: float) -> None:
        """Recompute the most recently admitted running request: back to the front of the queue."""
        _, s = self.running.popitem()
        if s.state == _DECODE:
            self._stop_decoding(s)
        else:
            self.free += s.blocks
            self.prefilling.remove(s)
        s.state = _WAITING
        s.target = s.request.prompt_tokens + s.generated
        s.computed = 0
        s.blocks = 0
        s.preemptions += 1
        s.wait_since_s = t
        self.stats.preemptions += 1
        self.waiting.appendleft(s)

    def finish_decoders(self, t: float) -> int:
        """Decoders whose last token came at this step (each leaves as _stop_decoding says)."""
        heap, step, running, block, by_offset, done = self.heap, self.step, self.running, self.block, self.by_offset, 0
        while heap and heap[0][0] <= step:
            finish, heap_id, s = heappop(heap)
            if s.heap_id != heap_id:
                continue  # preempted since
            self.sum_finish -= finish
            base = s.base
            self.free += -(-(base + step) // block)
            self.decoders -= 1
            self.sum_base -= base
            by_offset[base % block] -= 1
            s.generated += step - s.entered
            s.heap_id = -1
            del running[s.key]
            s.state = DONE
            s.finish_s = t
            done += 1
        return done

    # --- SGLang's admission (reserve_new_tokens)

    def _retracted(self, t: float) -> None:
        """After a retraction SGLang retracts on until RETRACT_STEPS decode steps fit, and
        resets new_token_ratio to the decoders' share of their outputs already made plus
        RETRACT_STEPS each (ScheduleBatch.retract_decode)."""
        while self.decoders > 1 and self.free * self.block < RETRACT_STEPS * self.decoders:
            self._preempt_last(t)
        ratio = ratio_after_retraction(self)
        if ratio is not None:
            self.ratio, self.ratio_step = ratio, self.step

    # --- one iteration

    def _prompt_ready(self) -> bool:
        """A prompt chunk can run now: a partly prefilled prompt with room for its next
        token, or the head of the queue admissible (SGLang's get_new_batch_prefill)."""
        block, free = self.block, self.free
        if any((s.blocks + free) * block > s.computed for s in self.prefilling):
            return True
        if not self.waiting or len(self.running) >= self.max_seqs:
            return False
        head = self.waiting[0]
        if _ceil_div(min(head.target, self.budget), block) > free:
            return False
        return not self.reserve or head.target + head.output - head.generated < room_tokens(self)

    def _admit(self, waiting: deque[Seq], c: int, t: float, blocks: int) -> Seq:
        """The head of the queue starts its prompt (its first chunk, c tokens, in `blocks`)."""
        s = waiting.popleft()
        s.state = _PREFILL
        s.key = key = self.next_key
        self.next_key = key + 1
        self.running[key] = s
        self.prefilling.append(s)
        s.blocks = blocks
        self.free -= blocks
        self.wait_area_s += t - s.wait_since_s
        return s

    def _iteration(self) -> None:
        t = self.clock
        block, waiting, running, max_seqs = self.block, self.waiting, self.running, self.max_seqs
        chunks: list[tuple[Seq, int]] = []
        prefill_tokens = attention = decoders = context = 0
        queue_changed = False
        held = self.window_left > 0 and self.decoders > 0  # multi-step: steps in flight, no scheduling

        if not self.chunked and not held and waiting and len(running) < max_seqs:
            # vLLM V0: whole prompts, and only prompts, when one can be admitted
            left = self.budget
            while waiting and len(running) < max_seqs:
                c = waiting[0].target
                if chunks and c > left:
                    break
                blocks = _ceil_div(c, block)
                if blocks > self.free:
                    break
                chunks.append((self._admit(waiting, c, t, blocks), c))
                prefill_tokens += c
                attention += c * (c + 1) // 2
                left -= c
            queue_changed = bool(chunks)

        if not chunks:
            preempted = False
            if self.decoders and not (self.separate and not held and self._prompt_ready()):
                due = (-self.step) % block
                by_offset = self.by_offset
                while by_offset[due] > self.free:
                    self._preempt_last(t)
                    preempted = True
                if preempted and self.reserve:
                    self._retracted(t)
                self.free -= by_offset[due]
                decoders = self.decoders
                context = self.sum_base + decoders * (self.step + 1)
            if self.chunked and not (held and self.decoders):
                left = self.budget - decoders
                for s in self.prefilling:
                    if left <= 0:
                        break
                    computed, have = s.computed, s.blocks
                    c = min(s.target - computed, left, (have + self.free) * block - computed)
                    if c <= 0:
                        continue
                    extra = _ceil_div(computed + c, block) - have
                    self.free -= extra
                    s.blocks = have + extra
                    chunks.append((s, c))
                    prefill_tokens += c
                    attention += c * computed + c * (c + 1) // 2
                    left -= c
                room = room_tokens(self) if self.reserve else _INF
                while not preempted and waiting and left > 0 and len(running) < max_seqs:
                    if self.reserve:
                        head = waiting[0]
                        need = head.target + head.output - head.generated
                        if need >= room:
                            break
                        room -= need
                    c = waiting[0].target
                    if c > left:
                        c = left
                    blocks = -(-c // block)
                    if blocks > self.free:
                        break
                    # _admit, written out
                    s = waiting.popleft()
                    s.state = _PREFILL
                    s.key = key = self.next_key
                    self.next_key = key + 1
                    running[key] = s
                    self.prefilling.append(s)
                    s.blocks = blocks
                    self.free -= blocks
                    self.wait_area_s += t - s.wait_since_s
                    chunks.append((s, c))
                    prefill_tokens += c
                    attention += c * (c + 1) // 2
                    left -= c
                    queue_changed = True
            queue_changed = queue_changed or preempted

        if not chunks and not decoders:
            raise RuntimeError("the scheduler found nothing to run on a busy replica (a bug)")
        if self.incoming:  # overlap: this batch is chosen; they are seen by the next one
            waiting.extend(self.incoming)
            self.incoming.clear()
        if queue_changed:
            stats, q = self.stats, len(waiting)
            if q > stats.max_queue:
                stats.max_queue = q
            stats.queue_timeline.append((t, q))

        dt = self.cost(decoders, context, prefill_tokens, float(attention))
        if not 0.0 <= dt < _INF:
            checked(dt)
        end = t + dt
        stats = self.stats
        self.clock = end
        stats.busy_s += dt
        stats.iterations += 1
        finished = 0
        if decoders:
            self.step += 1
            stats.tokens_out += decoders
            heap = self.heap
            if heap and heap[0][0] <= self.step:
                finished = self.finish_decoders(end)
            self.window_left = (self.window_left or self.steps) - 1
        else:
            self.window_left = 0
        completed = 0
        for s, c in chunks:
            s.computed = computed = s.computed + c
            if computed < s.target:
                continue
            completed += 1
            s.generated = generated = s.generated + 1
            stats.tokens_out += 1
            if s.first_s is None:
                s.first_s = end
            if generated == s.output:
                self.free += s.blocks
                s.state = DONE  # leaves `prefilling` below
                del running[s.key]
                s.finish_s = end
                finished += 1
            else:  # it decodes from now on: an aggregate (count, summed base, offset, completion step)
                step = self.step
                s.state = _DECODE
                s.entered = step
                s.base = base = computed - step
                self.decoders += 1
                self.sum_base += base
                self.by_offset[base % block] += 1
                self.heap_ids = heap_id = self.heap_ids + 1
                s.heap_id = heap_id
                heappush(self.heap, (step + s.output - generated, heap_id, s))
                self.sum_finish += step + s.output - generated
        if completed:
            prefilling = self.prefilling
            self.prefilling = [] if completed == len(prefilling) else [s for s in prefilling if s.state == _PREFILL]
        self.last_finished = finished
