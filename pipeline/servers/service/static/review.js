// The adapter page's record viewer: one sampled row at a time, next/previous (buttons, j/k, arrow keys),
// filters (failing checks, quarantined, longest first, random order), a flag per record (f), and how many
// records this reviewer has looked at. Flags and the reviewed set stay in this browser (localStorage), keyed
// by repo and spec hash, so a changed spec starts a fresh review. Nothing here is sent to the server.
"use strict";

(function () {
  const section = document.getElementById("records");
  if (!section) return;
  const records = Array.from(section.querySelectorAll("article.record"));
  if (!records.length) return;
  const key = "draftset-review:" + section.dataset.key;
  const saved = JSON.parse(localStorage.getItem(key) || '{"seen": [], "flagged": []}');
  const seen = new Set(saved.seen), flagged = new Set(saved.flagged);
  const filter = document.getElementById("record-filter");
  const pos = document.getElementById("record-pos");
  const reviewed = document.getElementById("record-reviewed");
  let order = records, at = 0;

  function store() {
    localStorage.setItem(key, JSON.stringify({ seen: [...seen], flagged: [...flagged] }));
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
      seen.add(current.dataset.row);
      pos.textContent = "row " + current.dataset.row + " · " + (at + 1) + " of " + order.length;
      current.querySelector(".record-flag").checked = flagged.has(current.dataset.row);
    }
    reviewed.textContent = "reviewed " + seen.size + " of " + records.length + " · flagged " + flagged.size;
    store();
  }

  function step(by) {
    if (!order.length) return;
    at = (at + by + order.length) % order.length;
    show();
  }

  records.forEach((r) => {
    r.querySelector(".record-flag").addEventListener("change", (ev) => {
      if (ev.target.checked) flagged.add(r.dataset.row); else flagged.delete(r.dataset.row);
      show();
    });
  });
  filter.addEventListener("change", () => { order = choose(filter.value); at = 0; show(); });
  document.getElementById("record-prev").addEventListener("click", () => step(-1));
  document.getElementById("record-next").addEventListener("click", () => step(1));
  document.addEventListener("keydown", (ev) => {
    const tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "j" || ev.key === "ArrowRight") step(1);
    else if (ev.key === "k" || ev.key === "ArrowLeft") step(-1);
    else if (ev.key === "f" && order.length) {
      const box = order[at].querySelector(".record-flag");
      box.checked = !box.checked;
      box.dispatchEvent(new Event("change"));
    } else return;
    ev.preventDefault();
  });
  show();
})();
