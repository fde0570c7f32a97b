// The plan shown, to take away: the whole answer of POST /solve as JSON, the plan's own
// fields as a two-column CSV (field,value) for a spreadsheet (both made from the answer
// the page holds), and the commands that launch it (POST /deploy).
"use strict";

function csvField(value) {
  const text = value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function planCsv(plan) {
  return ["field,value", ...Object.entries(plan).map(([k, v]) => `${csvField(k)},${csvField(v)}`)].join("\n") + "\n";
}

// the two links under the plan; an answer without a plan has none
function setDownloads(out) {
  const box = $("downloads");
  for (const a of box.querySelectorAll("a")) URL.revokeObjectURL(a.href);
  box.innerHTML = "";
  if (!out || !out.plan) return;
  const files = [
    ["plan.json", "application/json", JSON.stringify(out, null, 2)],
    ["plan.csv", "text/csv", planCsv(out.plan)],
  ];
  box.innerHTML = "download: " + files.map(([name]) => `<a id="download-${name.split(".")[1]}" download="${name}">${name}</a>`).join(" · ");
  files.forEach(([name, type, text]) => (box.querySelector(`[download="${name}"]`).href = URL.createObjectURL(new Blob([text], { type }))));
}

// a shell word as typed: quoted when it holds anything a shell reads specially
function shellWord(word) {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${String(word).replace(/'/g, "'\\''")}'`;
}

// the commands that launch the plan shown (POST /deploy with the sliders' settings)
async function showDeploy(seq) {
  const box = $("deploy");
  box.hidden = true;
  box.innerHTML = "";
  const r = await post("/deploy");
  if (seq !== state.seq || !r.ok) return;
  const lines = r.data.launch.map((x) => (r.data.launch.length > 1 ? `# ${x.node}\n` : "") + x.command.map(shellWord).join(" "));
  const replicas = r.data.replicas > 1 ? ` <small>(on each of the ${r.data.replicas} replicas)</small>` : "";
  box.innerHTML = `<h2>Deploy it${replicas}</h2><pre id="deploy-command">${esc(lines.join("\n"))}</pre>`;
  box.hidden = false;
}
