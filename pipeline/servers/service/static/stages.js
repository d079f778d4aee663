// The stages page: each stage's form is sent as JSON to POST /api/stages/KIND with the session's CSRF token.
// A refusal (a typo in a name, an unknown setting) is shown beside the form as text; a started job opens its page.
"use strict";

function stageBody(form) {
  const body = {};
  for (const el of form.querySelectorAll("[name]")) {
    const type = el.dataset.type, raw = el.value.trim();
    if (type === "boolean") { body[el.name] = el.checked; continue; }
    if (raw === "") continue;  // left empty: the stage's own default
    if (type === "integer") body[el.name] = Number.isInteger(Number(raw)) ? Number(raw) : raw;
    else if (type === "number") body[el.name] = Number.isNaN(Number(raw)) ? raw : Number(raw);
    else if (type === "json") {
      try { body[el.name] = JSON.parse(raw); }
      catch (e) { throw new Error(el.name + ": not JSON (" + e.message + ")"); }
    } else body[el.name] = raw;
  }
  return body;
}

function stageForms() {
  for (const form of document.querySelectorAll("form.stage-form")) {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const err = form.querySelector(".form-error"), button = form.querySelector("button[type=submit]");
      err.hidden = true;
      let body;
      try { body = stageBody(form); } catch (bad) { err.textContent = "error: " + bad.message; err.hidden = false; return; }
      button.disabled = true;
      try {
        const resp = await fetch("/api/stages/" + encodeURIComponent(form.dataset.kind), {
          method: "POST", credentials: "same-origin",
          headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()}, body: JSON.stringify(body)});
        const data = await resp.json();
        if (resp.ok) { window.location.href = "/jobs/" + encodeURIComponent(data.job_id); return; }
        err.textContent = "error: " + data.error + (data.next ? "\nnext: " + data.next : "");
        err.hidden = false;
      } finally { button.disabled = false; }
    });
  }
}
