// Pick a model and a GPU from the catalog (GET /models, GET /devices) in place of the
// spec's own, or a bundled example spec (GET /specs?command=solve) in place of the text:
// each model or GPU pick is a setting sent with every request (?set=model=NAME,
// ?set=search.gpus=[NAME]) as the sliders' are, so the server reads it as it reads the
// spec, the link carries it, and editing the spec's text drops it.
"use strict";

const PICKS = { "pick-model": "model", "pick-gpu": "search.gpus" };

async function fillPickers() {
  const [models, devices] = await Promise.all(["/models", "/devices"].map((path) => fetch(path).then((r) => (r.ok ? r.json() : []))));
  const fill = (id, items) => {
    const box = $(id);
    box.innerHTML = `<option value="">the spec's</option>` + items.map((x) => `<option value="${esc(x.name)}">${esc(x.display_name)}</option>`).join("");
  };
  fill("pick-model", models);
  fill("pick-gpu", devices);
  showPicks();
}

// the selects as the settings stand (a shared link's, or none after an edit)
function showPicks() {
  for (const [id, path] of Object.entries(PICKS)) {
    const value = state.sets[path] || "";
    $(id).value = path === "search.gpus" ? value.replace(/^\[|\]$/g, "") : value;
  }
}

function picked(id) {
  const path = PICKS[id];
  const name = $(id).value;
  if (name) state.sets[path] = path === "search.gpus" ? `[${name}]` : name;
  else delete state.sets[path];
  // another model or GPU: the sliders start again from the spec's own targets
  for (const p of Object.values(state.paths)) if (p) delete state.sets[p];
  state.base = null;
  updateLink();
  solve();
}

for (const id of Object.keys(PICKS)) $(id).addEventListener("change", () => picked(id));
specBox.addEventListener("input", showPicks);
fillPickers();

// the bundled specs solve reads: a pick puts its text in the editor (as an edit does:
// the settings drop) and solves it; editing the text away from it clears the pick
let bundled = {};
async function fillSpecs() {
  const r = await fetch("/specs?command=solve");
  const specs = r.ok ? await r.json() : [];
  bundled = Object.fromEntries(specs.map((s) => [s.name, s.text]));
  $("pick-spec").innerHTML =
    `<option value="">pick a bundled spec</option>` + specs.map((s) => `<option value="${esc(s.name)}" title="${esc(s.description)}">${esc(s.name)}</option>`).join("");
}

$("pick-spec").addEventListener("change", () => {
  const text = bundled[$("pick-spec").value];
  if (text === undefined) return;
  specBox.value = text;
  specBox.dispatchEvent(new Event("input"));
  solve();
});
specBox.addEventListener("input", () => {
  if (bundled[$("pick-spec").value] !== specBox.value) $("pick-spec").value = "";
});
fillSpecs();
