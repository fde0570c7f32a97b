// Two plans side by side: "keep this plan" holds the plan shown; every later answer (a
// slider moved, another GPU picked, the spec edited) is set beside it: cost, GPUs, TTFT,
// TPOT and what binds. The kept plan stays until kept again or let go.
"use strict";

const compare = { kept: null };

function planFigures(out) {
  const pl = out && out.plan;
  if (!pl) return { plan: "no plan", cost: "—", gpus: "—", ttft: "—", tpot: "—", binds: noPlanReason(out || {}) };
  const pool = pl.prefill_pool;
  let binds = "—";
  if (out.explained) binds = out.binding_targets.length ? out.binding_targets.join(", ") : "no target binds";
  return {
    plan: `${pool ? `${pool.replicas} × ${pool.gpu_display_name} prefill + ` : ""}${pl.replicas} × ${pl.gpu_display_name}, TP ${pl.tp}${pl.pp > 1 ? ` × PP ${pl.pp}` : ""}, ${pl.weights}/${pl.kv_cache}`,
    cost: `$${pl.cost_usd_per_hour.toFixed(2)}/h`,
    gpus: String(pl.gpus),
    ttft: seconds(pl.ttft_s),
    tpot: seconds(pl.tpot_s),
    binds: `${binds} (batch capped by ${pl.batch_capped_by})`,
  };
}

const ROWS = [["plan", "plan"], ["cost", "cost"], ["GPUs", "gpus"], ["TTFT", "ttft"], ["TPOT", "tpot"], ["what binds", "binds"]];

function renderCompare(out) {
  const box = $("compare");
  $("keep").hidden = !(out && out.plan);
  if (!compare.kept) {
    box.innerHTML = "";
    return;
  }
  const a = planFigures(compare.kept), b = planFigures(out);
  box.innerHTML =
    `<h2>Side by side <small>(<a href="#" id="unkeep">let the kept plan go</a>)</small></h2>` +
    table(["", "kept", "now"], ROWS.map(([label, key]) => [label, { text: a[key] }, { text: b[key] }]));
  $("unkeep").addEventListener("click", (e) => {
    e.preventDefault();
    compare.kept = null;
    renderCompare(state.last);
  });
}

$("keep").addEventListener("click", () => {
  compare.kept = state.last;
  renderCompare(state.last);
});
