"""Requests over time, served by replicas: an iteration-level simulator of a
continuous-batching engine, scheduling as vLLM V1 does, with two engines' rules told
apart (EngineLimits): SGLang (prefill_schedule "separate", its default without
--enable-mixed-chunk) runs prompt chunks first, as an iteration of their own that every
decoder waits for; vLLM V0's multi-step scheduling (scheduler_steps k > 1) schedules k
decode steps at once, so nothing is admitted until the window in flight is done (a
prompt-only iteration is one step; windows follow each other from the first decode step).

The physics says what one iteration costs; what a user sees under traffic also
depends on the queue, the batch the scheduler builds and the KV cache it runs out of.
Each replica repeats one iteration at a time:

1. Every running sequence that has finished its prompt decodes one token (one token
   of the iteration's budget each). A decode step writes the KV of the sequence's
   last token and reads its whole length (prompt + tokens generated: what the cost
   is given as decode_context_tokens). A sequence whose next KV slot needs a new
   block, when none is free, preempts the most recently admitted running request
   (itself, if it is the last): recomputation — its blocks are freed and it goes
   back to the FRONT of the waiting queue, to prefill its prompt and the tokens
   generated so far again. Its first-token time stays as first measured. An
   iteration that preempted admits no waiting request (as vLLM V1).
2. The rest of the budget (separate: all of it, in an iteration without decoders,
   whenever a chunk can run) goes to prompt chunks: first to requests admitted and
   partly prefilled (a chunk as large as the budget and the free blocks allow), then
   to waiting requests in FCFS order, admitted while fewer than max_num_seqs run, the
   budget lasts and the free blocks cover the request's chunk (the first request they
   do not cover stops admission: FCFS, no overtaking).
   Without chunked prefill (vLLM V0) a prompt is prefilled whole in one iteration, and
   an iteration that admits a prompt runs prompts only; it decodes when no waiting
   prompt can be admitted. A recomputation longer than the budget is let through
   alone in its iteration (vLLM V0 would drop it; here every admitted request ends).
3. The iteration takes `cost.iteration_s` of what was scheduled. At its end a request
   whose prompt (or recomputation) completed emits a token — its first, for a new
   request — decoders emit one token each, and a request that has all its output
   tokens finishes and frees its blocks.

An arrival is seen by iterations that start at or after it; an idle replica jumps to
the next arrival. Routing is round robin, or join the shortest queue (fewest
requests waiting or running at the arrival instant, ties to the lowest index; kept in
heaps, routing.py, not scanned). A
request that could never be served is rejected at arrival, and takes no turn: its
longest KV (prompt + output − 1 tokens, since the last token's KV is never written)
over the replica's whole blocks, or, without chunking, its prompt over the budget.
Nothing is random.

Speed: decode-only stretches are advanced in bulk. While no prompt is being
prefilled and no waiting request can be admitted, the batch stays the same until the
next arrival routed here (with jsq: any arrival), the next completion, or the next
iteration that needs a KV block beyond the free ones; the k iterations before that
are taken at once. A fixed batch's iteration cost is affine in its context (the
physics guarantees it), so the k iterations take k × (first + last) / 2 exactly, and
the blocks they allocate are counted exactly from each sequence's position in its
block. Decoders are kept as
aggregates (count, summed context, counts by position within a block, a heap of
completion steps), so an iteration costs O(1) plus its events, not O(batch).

Bounds: a simulation takes at most budget.MAX_EVENTS iterations, bulk stretches and
arrivals (past it, TooMuchWork names what to reduce) and stops at its caller's
deadline (budget.deadline: Cancelled).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence

from solver.traffic.budget import Work
from solver.traffic.routing import ShortestQueue
from solver.traffic.types import (
    METRICS,
    ROUTINGS,
    TIMELINE_POINTS,
    EngineLimits,
    IterationCost,
    ReplicaStats,
    Request,
    RequestResult,
    SimResult,
    percentile,
)

__all__ = ["METRICS", "ROUTINGS", "EngineLimits", "IterationCost", "ReplicaStats", "Request", "RequestResult", "SimResult", "percentile", "simulate"]


_WAITING, _PREFILL, _DECODE, _DONE = 0, 1, 2, 3


class _Seq:
    """One request's state in a replica. A decoder's length is implicit: at the
    replica's decode step D it has written base + D KV tokens and made
    generated + (D − entered) tokens."""

    __slots__ = (
        "request",
        "prompt",
        "output",
        "state",
        "target",
        "computed",
        "blocks",
        "generated",
        "key",
        "base",
        "entered",
        "heap_id",
        "wait_since_s",
        "first_s",
        "finish_s",
        "preemptions",
        "replica",
    )

    def __init__(self, request: Request) -> None:
        self.request = request
        self.prompt = request.prompt_tokens
        self.output = request.output_tokens
        self.state = _WAITING
        self.target = self.prompt  # tokens to prefill: the prompt, or prompt + generated after a preemption
        self.computed = 0  # KV tokens written (while prefilling)
        self.blocks = 0  # blocks held (while prefilling)
        self.generated = 0  # output tokens made (for a decoder: at step `entered`)
        self.key = -1
        self.base = 0
        self.entered = 0
        self.heap_id = -1
        self.wait_since_s = request.arrival_s
        self.first_s: float | None = None
        self.finish_s = math.nan
        self.preemptions = 0
        self.replica = -1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _checked(seconds: float) -> float:
    if not 0.0 <= seconds < math.inf:
        raise ValueError(f"an iteration cost must be finite and not negative, got {seconds!r}")
    return seconds


class _Replica:
    """One engine: its queue, its running batch, its KV blocks and its clock."""

    def __init__(self, index: int, cost: IterationCost, limits: EngineLimits, step_by_step: bool, work: Work) -> None:
        self.index = index
        self.work = work
        self.cost = cost.iteration_s
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
        self.waiting: deque[_Seq] = deque()
        self.running: dict[int, _Seq] = {}  # by admission, oldest first
        self.prefilling: list[_Seq] = []  # running with their prompt not done, by admission
        self.next_key = 0
        # decoders, as aggregates
        self.step = 0  # decode steps taken: every decoder advances one token per step
        self.decoders = 0
        self.sum_base = 0
        self.by_offset = [0] * self.block  # decoders by base mod block: who needs a block at which step
        self.heap: list[tuple[int, int, _Seq]] = []  # (step at which it finishes, id, seq)
        self.heap_ids = 0
        self.last_finished = 0  # requests that finished at the end of the last iteration (at self.clock)
        self.stats = ReplicaStats()
        self.wait_area_s = 0.0

    # --- arrivals and the queue

    def arrive(self, s: _Seq, t: float) -> None:
        if not self.waiting and not self.running:
            self.clock = max(self.clock, t)
        s.replica = self.index
        s.wait_since_s = t
        self.waiting.append(s)
        self._note_queue(t)

    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    def in_system_at(self, t: float) -> int:
        """Requests routed here and not finished at `t` (the replica has run every
        iteration that starts before `t`; only the last may end after it)."""
        n = len(self.waiting) + len(self.running)
        return n + self.last_finished if self.clock > t else n

    def _note_queue(self, t: float) -> None:
        q = len(self.waiting)
        if q > self.stats.max_queue:
            self.stats.max_queue = q
        self.stats.queue_timeline.append((t, q))

    def advance(self, until: float) -> None:
        """Run every iteration that starts before `until`."""
        work = self.work
        while (self.waiting or self.running) and self.clock < until:
            work.events += 1
            if work.events >= work.next_check:
                work.check()
            if not self._decode_in_bulk(until):
                self._iteration()

    # --- sequences entering and leaving

    def _admit(self, s: _Seq, t: float, blocks: int) -> None:
        s.state = _PREFILL
        s.key = self.next_key
        self.next_key += 1
        self.running[s.key] = s
        self.prefilling.append(s)
        s.blocks = blocks
        self.free -= blocks
        self.wait_area_s += t - s.wait_since_s

    def _start_decoding(self, s: _Seq) -> None:
        s.state = _DECODE
        s.entered = self.step
        s.base = s.computed - self.step
        self.decoders += 1
        self.sum_base += s.base
        self.by_offset[s.base % self.block] += 1
        self.heap_ids += 1
        s.heap_id = self.heap_ids
        heapq.heappush(self.heap, (self.step + s.output - s.generated, s.heap_id, s))

    def _stop_decoding(self, s: _Seq) -> None:
        """A decoder leaves the batch: its blocks are freed and its tokens made real."""
        self.free += _ceil_div(s.base + self.step, self.block)
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
        s.target = s.prompt + s.generated
        s.computed = 0
        s.blocks = 0
        s.preemptions += 1
        s.wait_since_s = t
        self.stats.preemptions += 1
        self.waiting.appendleft(s)

    def _finish(self, s: _Seq, t: float) -> None:
        del self.running[s.key]
        s.state = _DONE
        s.finish_s = t

    def _finish_decoders(self, t: float) -> int:
        """Decoders whose last token came at this step."""
        heap, done = self.heap, 0
        while heap and heap[0][0] <= self.step:
            _, heap_id, s = heapq.heappop(heap)
            if s.heap_id != heap_id:
                continue  # preempted since
            self._stop_decoding(s)
            self._finish(s, t)
            done += 1
        return done

    # --- one iteration

    def _prompt_ready(self) -> bool:
        """A prompt chunk can run now: a partly prefilled prompt with room for its next
        token, or the head of the queue admissible (SGLang's get_new_batch_prefill)."""
        block = self.block
        if any((s.blocks + self.free) * block > s.computed for s in self.prefilling):
            return True
        if not self.waiting or len(self.running) >= self.max_seqs:
            return False
        return _ceil_div(min(self.waiting[0].target, self.budget), block) <= self.free

    def _iteration(self) -> None:
        t = self.clock
        block, waiting, running = self.block, self.waiting, self.running
        chunks: list[tuple[_Seq, int]] = []
        prefill_tokens = 0
        attention = 0
        decoders = 0
        context = 0
        queue_changed = False
        held = self.window_left > 0 and self.decoders > 0  # multi-step: steps in flight, no scheduling

        if not self.chunked and not held and waiting and len(running) < self.max_seqs:
            # vLLM V0: whole prompts, and only prompts, when one can be admitted
            left = self.budget
            while waiting and len(running) < self.max_seqs:
                head = waiting[0]
                c = head.target
                if chunks and c > left:
                    break
                blocks = _ceil_div(c, block)
                if blocks > self.free:
                    break
                waiting.popleft()
                self._admit(head, t, blocks)
                chunks.append((head, c))
                prefill_tokens += c
                attention += c * (c + 1) // 2
                left -= c
            queue_changed = bool(chunks)

        if not chunks:
            preempted = False
            prompt_pass = self.separate and not held and self._prompt_ready()
            if self.decoders and not prompt_pass:
                due = (-self.step) % block
                while self.by_offset[due] > self.free:
                    self._preempt_last(t)
                    preempted = True
                self.free -= self.by_offset[due]
                decoders = self.decoders
                context = self.sum_base + decoders * (self.step + 1)
            if self.chunked and not (held and self.decoders):
                left = self.budget - decoders
                for s in self.prefilling:
                    if left <= 0:
                        break
                    c = min(s.target - s.computed, left, (s.blocks + self.free) * block - s.computed)
                    if c <= 0:
                        continue
                    extra = _ceil_div(s.computed + c, block) - s.blocks
                    self.free -= extra
                    s.blocks += extra
                    chunks.append((s, c))
                    prefill_tokens += c
                    attention += c * s.computed + c * (c + 1) // 2
                    left -= c
                while not preempted and waiting and left > 0 and len(running) < self.max_seqs:
                    head = waiting[0]
                    c = min(head.target, left)
                    blocks = _ceil_div(c, block)
                    if blocks > self.free:
                        break
                    waiting.popleft()
                    self._admit(head, t, blocks)
                    chunks.append((head, c))
                    prefill_tokens += c
                    attention += c * (c + 1) // 2
                    left -= c
                    queue_changed = True
            queue_changed = queue_changed or preempted

        if not chunks and not decoders:
            raise RuntimeError("the scheduler found nothing to run on a busy replica (a bug)")
        if queue_changed:
            self._note_queue(t)

        dt = _checked(self.cost(decoders, context, prefill_tokens, float(attention)))
        end = t + dt
        stats = self.stats
        self.clock = end
        stats.busy_s += dt
        stats.iterations += 1
        finished = 0
        if decoders:
            self.step += 1
            stats.tokens_out += decoders
            finished += self._finish_decoders(end)
            self.window_left = (self.window_left or self.steps) - 1
        else:
            self.window_left = 0
        completed = False
        for s, c in chunks:
            s.computed += c
            if s.computed < s.target:
                continue
            completed = True
            s.generated += 1
            stats.tokens_out += 1
            if s.first_s is None:
                s.first_s = end
            if s.generated == s.output:
                self.free += s.blocks
                s.state = _DONE  # leaves `prefilling` below
                self._finish(s, end)
                finished += 1
            else:
                self._start_decoding(s)
        if completed:
            self.prefilling = [s for s in self.prefilling if s.state == _PREFILL]
        self.last_finished = finished

    # --- decode-only stretches at once

    def _stretch(self) -> int:
        """The decode-only iterations from now before the batch can change (a completion,
        a block that is not free, a prompt admitted after a multi-step window), if no
        request arrives here; 0 when the next iteration is not one of them."""
        if self.step_by_step or self.prefilling or not self.decoders:
            return 0
        block, step, free, n = self.block, self.step, self.free, self.decoders
        by_offset = self.by_offset
        first_need = by_offset[(-step) % block]
        if first_need > free:
            return 0
        window = 0  # > 0: a waiting prompt is admitted after this many steps in flight
        if self.waiting and len(self.running) < self.max_seqs:
            head = self.waiting[0]
            if self.separate:
                ready = _ceil_div(min(head.target, self.budget), block) <= free
            elif self.chunked:
                left = self.budget - n
                ready = left > 0 and _ceil_div(min(head.target, left), block) <= free - first_need
            else:
                ready = _ceil_div(head.target, block) <= free
            if ready and self.window_left == 0:
                return 0
            if ready:
                window = self.window_left
        # The batch cannot change before its next completion...
        heap = self.heap
        while heap[0][1] != heap[0][2].heap_id:
            heapq.heappop(heap)
        k = heap[0][0] - step
        if window:
            k = min(k, window)
        # ...nor past the blocks: over k steps the decoders need (k // block) × n blocks plus
        # those due in the first k mod block steps of the next cycle.
        full, rest = divmod(free, n)
        j, due = 0, 0
        while j < block - 1:
            due += by_offset[(-(step + j)) % block]
            if due > rest:
                break
            j += 1
        return min(k, full * block + j)

    def quiet_until(self) -> float:
        """A time before which the requests in this replica cannot change unless one
        arrives here: the end of its decode-only stretch (a little early, against
        rounding), else its clock. JSQ advances a replica only from then on."""
        if self.last_finished or not (self.waiting or self.running):
            return self.clock
        k = self._stretch()
        if not k:
            return self.clock
        n = self.decoders
        ctx0 = self.sum_base + n * (self.step + 1)
        span = k * (_checked(self.cost(n, ctx0, 0, 0.0)) + _checked(self.cost(n, ctx0 + (k - 1) * n, 0, 0.0))) / 2
        return self.clock + span * (1 - 1e-6) - abs(self.clock) * 1e-12

    def _decode_in_bulk(self, until: float) -> bool:
        """Take every decode-only iteration before the batch can change, at once; False
        when the next iteration is not one (a prompt to prefill or admit, a preemption)."""
        k = self._stretch()
        if not k:
            return False
        block, step, n, by_offset = self.block, self.step, self.decoders, self.by_offset
        ctx0 = self.sum_base + n * (step + 1)
        c0 = _checked(self.cost(n, ctx0, 0, 0.0))
        if k >= 2 and until < math.inf:
            # ...nor past the next arrival: iteration m starts at m·c0 + d·m(m − 1)/2.
            c1 = _checked(self.cost(n, ctx0 + n, 0, 0.0))
            k = _iterations_before(until - self.clock, c0, c1 - c0, k)
        c_last = c0 if k == 1 else _checked(self.cost(n, ctx0 + (k - 1) * n, 0, 0.0))
        dt = k * (c0 + c_last) / 2
        need = (k // block) * n + sum(by_offset[(-(step + i)) % block] for i in range(k % block))
        self.free -= need
        self.window_left = ((self.window_left or self.steps) - k) % self.steps
        self.step += k
        stats = self.stats
        stats.tokens_out += k * n
        stats.iterations += k
        stats.busy_s += dt
        self.clock += dt
        self.last_finished = self._finish_decoders(self.clock)
        return True


def _iterations_before(span_s: float, c0: float, slope: float, k: int) -> int:
    """How many of k iterations (costs c0, c0 + slope, …) start before span_s; at least 1."""

    def start(m: int) -> float:
        return m * c0 + slope * m * (m - 1) / 2

    if start(k - 1) < span_s:
        return k
    if slope > 0:
        b = c0 - slope / 2
        guess = (-b + math.sqrt(b * b + 2 * slope * span_s)) / slope
    else:
        guess = span_s / c0 if c0 > 0 else float(k)
    m = min(max(int(guess), 0), k - 1)
    while m > 0 and start(m) >= span_s:
        m -= 1
    while m + 1 < k and start(m + 1) < span_s:
        m += 1
    return m + 1


def _downsampled(points: list[tuple[float, int]]) -> list[tuple[float, int]]:
    if len(points) <= TIMELINE_POINTS:
        return points
    size = len(points) / TIMELINE_POINTS
    out = []
    for i in range(TIMELINE_POINTS):
        stretch = points[int(i * size) : int((i + 1) * size)]
        out.append(max(stretch, key=lambda p: p[1]))
    return out


def _never_served(r: Request, limits: EngineLimits) -> bool:
    if _ceil_div(r.prompt_tokens + r.output_tokens - 1, limits.block_size_tokens) > limits.kv_blocks:
        return True
    return not limits.chunked_prefill and r.prompt_tokens > limits.max_num_batched_tokens


def simulate(
    requests: Sequence[Request],
    cost: IterationCost,
    limits: EngineLimits,
    replicas: int = 1,
    routing: str = "round_robin",
    *,
    front_end_s: float = 0.0,
    _step_by_step: bool = False,
) -> SimResult:
    """Serve `requests` on `replicas` identical engines; each reaches its engine
    `front_end_s` after it arrives (the server's parsing and tokenisation, which every
    request's TTFT and end to end include). `_step_by_step` turns the bulk decode off
    (for the test that checks the two agree)."""
    if not 0.0 <= front_end_s < math.inf:
        raise ValueError(f"front_end_s must be finite and not negative, got {front_end_s!r}")
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas!r}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    work = Work(f"{len(requests):,} requests on {replicas:,} replicas ({routing})")
    engines = [_Replica(i, cost, limits, _step_by_step, work) for i in range(replicas)]
    jsq = ShortestQueue(engines) if routing == "jsq" else None
    served: list[_Seq] = []
    rejected: list[Request] = []
    turn = 0
    for r in sorted(requests, key=lambda r: r.arrival_s):
        work.events += 1
        if work.events >= work.next_check:
            work.check()
        if _never_served(r, limits):
            rejected.append(r)
            continue
        t = r.arrival_s + front_end_s
        if jsq is None:
            engine = engines[turn % replicas]
            turn += 1
            engine.advance(t)
        else:
            engine = engines[jsq.route(t)]
            engine.advance(t)  # its load was known without advancing it (a quiet stretch)
        s = _Seq(r)
        engine.arrive(s, t)
        if jsq is not None:
            jsq.update(engine.index, t)
        served.append(s)
    for e in engines:
        e.advance(math.inf)

    results = []
    for s in served:
        assert s.first_s is not None and s.state == _DONE
        results.append(RequestResult(s.request, s.replica, s.first_s, s.finish_s, s.preemptions))
    duration = max(s.finish_s for s in served) - served[0].request.arrival_s if served else 0.0
    stats = []
    for e in engines:
        st = e.stats
        st.mean_queue = e.wait_area_s / duration if duration > 0 else 0.0
        st.queue_timeline = _downsampled(st.queue_timeline)
        stats.append(st)
    return SimResult(results, stats, duration, rejected)
