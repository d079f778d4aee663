// The adapter page's record viewer: one sampled row at a time, next/previous (buttons, j/k, arrow keys),
// filters (failing checks, quarantined, longest first, random order). Review state is the server's
// (record_reviews.py): "mark reviewed" (r) stores a mark for the record under the spec on screen, the
// "reviewed N of M" line is the server's answer, and "next unreviewed" (u) asks the server's queue.
// Flags are the server's: a flag (f focuses the current record's form) and a resolution are posted to the
// JSON API with the session's CSRF token, and the page reloads on the same record to show the verdict they
// change. Everything from the server is put in the page as text, never as markup.
"use strict";

(function () {
  const section = document.getElementById("records");
  if (!section) return;
  const records = Array.from(section.querySelectorAll("article.record"));
  const api = "/api/adapters/" + section.dataset.repo.split("/").map(encodeURIComponent).join("/") + "/flags";

  async function post(url, body, errorBox) {
    errorBox.textContent = "";
    const resp = await fetch(url, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()}, body: JSON.stringify(body)});
    if (resp.ok) return true;
    let data = {};
    try { data = await resp.json(); } catch (e) { data = {error: "HTTP " + resp.status}; }
    errorBox.textContent = "error: " + (data.error || ("HTTP " + resp.status)) + (data.next ? " · next: " + data.next : "");
    return false;
  }

  function reloadAt(row) {
    if (row !== undefined) history.replaceState(null, "", "#row-" + row);
    window.location.reload();
  }

  document.querySelectorAll("form.flag-form").forEach((form) => {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const body = {spec_hash: section.dataset.spec, row_index: parseInt(form.dataset.row, 10),
                    kind: form.querySelector(".flag-kind").value, note: form.querySelector(".flag-note").value || null,
                    record_id: form.dataset.record || null};
      if (await post(api, body, form.querySelector(".form-error"))) reloadAt(form.dataset.row);
    });
  });
  document.querySelectorAll("form.resolve-form").forEach((form) => {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const url = api + "/" + encodeURIComponent(form.dataset.flag) + "/resolve";
      if (await post(url, {note: form.querySelector("input").value}, form.querySelector(".form-error"))) reloadAt();
    });
  });

  if (!records.length) return;
  const filter = document.getElementById("record-filter");
  const pos = document.getElementById("record-pos");
  const reviewed = document.getElementById("record-reviewed");
  const markButton = document.getElementById("record-mark");
  const reviewError = document.getElementById("record-review-error");
  const reviewsApi = api.replace(/\/flags$/, "/reviews");
  const sampled = new URLSearchParams(window.location.search).get("rows") || "20";
  let order = records, at = 0;

  function showMark() {
    if (!markButton || !order.length) return;
    markButton.textContent = order[at].dataset.reviewed === "1" ? "unmark reviewed" : "mark reviewed";
  }

  function applyState(state) {  // the server's answer: every record's mark, and the line
    const done = new Set(state.reviewed.map(String));
    for (const r of records) {
      r.dataset.reviewed = done.has(r.dataset.row) ? "1" : "0";
      const pill = r.querySelector(".reviewed-pill");
      pill.hidden = r.dataset.reviewed !== "1";
      pill.textContent = "reviewed" + (state.reviewed_by[r.dataset.row] ? " by " + state.reviewed_by[r.dataset.row] : "");
    }
    reviewed.textContent = state.line;
    showMark();
  }

  async function toggleMark() {
    if (!order.length) return;
    const current = order[at];
    const body = {spec_hash: section.dataset.spec, row_index: parseInt(current.dataset.row, 10),
                  reviewed: current.dataset.reviewed !== "1", record_id: current.dataset.record || null,
                  rows: parseInt(sampled, 10)};
    const resp = await fetch(reviewsApi, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()}, body: JSON.stringify(body)});
    const data = await resp.json();
    if (!resp.ok) { reviewError.textContent = "error: " + data.error + (data.next ? " · next: " + data.next : ""); return; }
    reviewError.textContent = "";
    applyState(data);
  }

  async function nextUnreviewed() {
    const query = new URLSearchParams({rows: sampled});
    if (order.length) query.set("after", order[at].dataset.row);
    const q = new URLSearchParams(window.location.search).get("q");
    if (q) query.set("q", q);
    const resp = await fetch(reviewsApi + "?" + query.toString(), {credentials: "same-origin"});
    const data = await resp.json();
    if (!resp.ok) { reviewError.textContent = "error: " + data.error; return; }
    applyState(data);
    if (data.next_unreviewed === null) { reviewError.textContent = "every record here is reviewed or flagged"; return; }
    reviewError.textContent = "";
    goTo(data.next_unreviewed);
  }

  function shuffled(list) {
    const out = list.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  function choose(kind) {
    if (kind === "failing") return records.filter((r) => r.dataset.failing === "1");
    if (kind === "quarantined") return records.filter((r) => r.dataset.quarantined === "1");
    if (kind === "longest") return records.slice().sort((a, b) => b.dataset.length - a.dataset.length);
    if (kind === "random") return shuffled(records);
    return records;
  }

  function show() {
    records.forEach((r) => { r.hidden = true; });
    if (!order.length) {
      pos.textContent = "no row matches this filter";
    } else {
      const current = order[at];
      current.hidden = false;
      pos.textContent = "row " + current.dataset.row + " · " + (at + 1) + " of " + order.length;
    }
    showMark();
  }

  function step(by) {
    if (!order.length) return;
    at = (at + by + order.length) % order.length;
    show();
  }

  function goTo(row) {  // #row-N (a flag's link, or the record just flagged): that record, in the full order
    const i = records.findIndex((r) => r.dataset.row === String(row));
    if (i < 0) return false;
    filter.value = "all"; order = records; at = i; show();
    return true;
  }

  filter.addEventListener("change", () => { order = choose(filter.value); at = 0; show(); });
  document.getElementById("record-prev").addEventListener("click", () => step(-1));
  document.getElementById("record-next").addEventListener("click", () => step(1));
  document.getElementById("record-queue").addEventListener("click", nextUnreviewed);
  if (markButton) markButton.addEventListener("click", toggleMark);
  document.querySelectorAll("[data-row-link]").forEach((a) => a.addEventListener("click", (ev) => {
    if (goTo(a.dataset.rowLink)) { ev.preventDefault(); history.replaceState(null, "", "#row-" + a.dataset.rowLink); records[at].scrollIntoView(); }
  }));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && ev.target.closest && ev.target.closest("form.flag-form")) {
      ev.target.blur();  // out of the flag form: j/k move between records again
      return;
    }
    const tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "j" || ev.key === "ArrowRight") step(1);
    else if (ev.key === "k" || ev.key === "ArrowLeft") step(-1);
    else if (ev.key === "u") nextUnreviewed();
    else if (ev.key === "r" && markButton) toggleMark();
    else if (ev.key === "f" && order.length) {
      const kind = order[at].querySelector(".flag-kind");  // absent for a viewer: nothing to focus
      if (!kind) return;
      kind.focus();
    } else return;
    ev.preventDefault();
  });
  const wanted = /^#row-(\d+)$/.exec(window.location.hash);
  if (!(wanted && goTo(wanted[1]))) show();
})();

// Approve is enabled only when the API would take it: nothing blocks it, every open REVIEW item is ticked
// (when those are the only blockers), or force is ticked with a note (the server still decides).
(function () {
  const form = document.querySelector("[data-testid=approve-form]");
  if (!form) return;
  const button = form.querySelector("[data-testid=approve]");
  const boxes = Array.from(form.querySelectorAll("[data-testid=checked]"));
  const force = form.querySelector("[data-testid=force]");
  const note = form.querySelector("[data-testid=approve-note]");
  function update() {
    const state = form.dataset.approvable;
    const ticked = boxes.length > 0 && boxes.every(b => b.checked);
    const forced = force.checked && note.value.trim() !== "";
    button.disabled = !(state === "yes" || (state === "review" && ticked) || forced);
  }
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();
})();
