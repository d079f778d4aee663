// Light JavaScript for the pages: live agents on a job page (SSE) and the SQL console.
// Every value from the server is put in the page as text (textContent), never as markup.
"use strict";

function csrf() { return document.querySelector('meta[name="csrf-token"]').content; }

function watchJob(jobId) {
  const source = new EventSource("/api/jobs/" + encodeURIComponent(jobId) + "/events");
  const log = document.getElementById("job-log");
  source.onmessage = (msg) => {
    const ev = JSON.parse(msg.data);
    if (ev.category) {
      const row = document.querySelector('tr[data-agent="' + CSS.escape(ev.category) + '"]');
      if (!row) return;
      if (ev.stage) {
        const pill = row.querySelector(".stage span");
        pill.textContent = ev.stage;
        pill.className = "pill " + ev.stage;
      }
      for (const key of ["hub_calls", "cache_hits", "hits", "candidates"]) {
        if (ev[key] !== undefined && typeof ev[key] !== "object") row.querySelector("." + key).textContent = ev[key];
      }
      if (ev.error) row.querySelector(".error-cell").textContent = String(ev.error).slice(0, 80);
    } else if (ev.run_id && ev.counts) {
      showRun(ev);
    } else if (ev.stage === "propose") {
      log.textContent = "proposing an adapter for " + ev.repo_id + " …";
    } else if (ev.stage === "node") {
      log.textContent = "graph: " + ev.node;
    }
    document.getElementById("job-status").textContent = "running";
  };
  source.addEventListener("end", () => { source.close(); window.location.reload(); });
  source.onerror = () => { source.close(); setTimeout(() => window.location.reload(), 1000); };
}

// A stage run's live counts (its own accounting: in, out, skipped_*, dropped_*, errors) in the runs table.
function showRun(ev) {
  const body = document.querySelector("#runs tbody");
  if (!body) return;
  let row = body.querySelector('tr[data-run="' + CSS.escape(ev.run_id) + '"]');
  if (!row) {
    row = body.insertRow();
    row.dataset.run = ev.run_id;
    for (const key of ["stage", "status", "in", "out", "skipped", "dropped", "errors", "run"]) {
      const cell = row.insertCell();
      cell.className = key + (["in", "out", "skipped", "errors"].includes(key) ? " num" : "");
      cell.dataset.label = key;
    }
    row.querySelector(".stage").textContent = ev.stage;
    const code = document.createElement("code");
    code.textContent = ev.run_id;
    row.querySelector(".run").appendChild(code);
  }
  const c = ev.counts, n = (v) => (v || 0).toLocaleString("en-US");
  const pill = document.createElement("span");
  pill.className = "pill " + ev.status;
  pill.textContent = ev.status;
  row.querySelector(".status").replaceChildren(pill);
  row.querySelector(".in").textContent = n(c.in);
  row.querySelector(".out").textContent = n(c.out);
  row.querySelector(".errors").textContent = n(c.errors);
  let skipped = 0;
  const dropped = [];
  for (const [k, v] of Object.entries(c).sort()) {
    if (k.startsWith("skipped_")) skipped += v;
    else if (k.startsWith("dropped_") && v) dropped.push(k.slice(8) + "=" + n(v));
  }
  row.querySelector(".skipped").textContent = n(skipped);
  row.querySelector(".dropped").textContent = dropped.join(", ") || "-";
}

function sqlConsole() {
  const form = document.getElementById("sql-form");
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const status = document.getElementById("sql-status"), err = document.getElementById("sql-error");
    const table = document.getElementById("sql-result");
    table.replaceChildren(); err.hidden = true; status.textContent = "running…";
    const started = performance.now();
    const resp = await fetch("/api/sql", {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()},
      body: JSON.stringify({query: document.getElementById("sql-query").value,
                            limit: parseInt(document.getElementById("sql-limit").value || "200", 10)})});
    const data = await resp.json();
    if (!resp.ok) {
      err.hidden = false; status.textContent = "";
      err.textContent = "error: " + data.error + (data.next ? "\nnext: " + data.next : "");
      return;
    }
    const head = table.createTHead().insertRow();
    for (const c of data.columns) { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); }
    const body = table.createTBody();
    for (const r of data.rows) {
      const tr = body.insertRow();
      for (const v of r) tr.insertCell().textContent = v === null ? "" : (typeof v === "object" ? JSON.stringify(v) : String(v));
    }
    status.textContent = data.row_count + " row(s)" + (data.truncated ? " (truncated at the limit)" : "") +
      " in " + Math.round(performance.now() - started) + " ms";
  });
}
