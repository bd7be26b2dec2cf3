// manualqa admin page: cookie session (logged in with an admin key) + CSRF token on every write.
"use strict";
const $ = (id) => document.getElementById(id);
let csrf = null;

function esc(s) { return String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c])); }

async function api(method, url, body) {
  const opts = {method, credentials: "same-origin", headers: {}};
  if (method !== "GET") opts.headers["X-CSRF-Token"] = csrf || "";
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(url, opts);
  const data = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(data?.error?.message || r.statusText);
  return data;
}

function loggedIn(session) {
  csrf = session.csrf;
  $("login-box").hidden = true; $("admin").hidden = false; $("logout").hidden = false;
  $("who").textContent = `Logged in as ${session.name} (${session.role}).`;
  refreshAll();
}

async function refreshAll() { await Promise.allSettled([loadManuals(), loadVersions(), loadDeployment(), loadLog()]); }

async function loadManuals() {
  const data = await api("GET", "/api/v1/manuals");
  const tb = $("manuals").querySelector("tbody"); tb.innerHTML = "";
  for (const m of data.manuals) {
    const tr = document.createElement("tr");
    const missing = (m.pages_without_text || []);
    tr.innerHTML = `<td>${esc(m.title)}</td><td><a href="${esc(m.file_url)}" target="_blank">${esc(m.file_name)}</a></td>
      <td>${esc(m.page_count)}</td><td title="${esc(m.sha256)}"><code>${esc(m.sha256.slice(0, 12))}…</code></td>
      <td>${missing.length ? esc(missing.join(", ")) : "none"}</td>
      <td><button type="button" class="secondary" data-del="${esc(m.sha256)}">Remove</button></td>`;
    tb.appendChild(tr);
  }
  tb.querySelectorAll("[data-del]").forEach((b) => b.addEventListener("click", async () => {
    if (!confirm("Remove this manual? A new index version is built without it.")) return;
    try { await api("DELETE", `/api/v1/manuals/${b.dataset.del}`); } catch (e) { alert(e.message); }
    refreshAll();
  }));
}

async function loadVersions() {
  const data = await api("GET", "/api/v1/index/versions");
  const tb = $("versions").querySelector("tbody"); tb.innerHTML = "";
  const a = $("diff-a"), b = $("diff-b"); a.innerHTML = ""; b.innerHTML = "";
  // Newest first, whatever order the API lists them in; "diff from" the previous to the newest.
  data.versions.sort((x, y) => String(y.created_at).localeCompare(String(x.created_at)));
  for (const v of data.versions) {
    const active = v.id === data.active;
    const tr = document.createElement("tr");
    tr.innerHTML = `<td><code>${esc(v.id)}</code>${active ? " <strong>(active)</strong>" : ""}</td><td>${esc(v.created_at)}</td>
      <td>${esc(v.manuals)}</td><td>${esc(v.chunks)}</td><td><code>${esc(v.parent || "")}</code></td>
      <td>${active ? "" : `<button type="button" class="secondary" data-act="${esc(v.id)}">Activate</button>`}</td>`;
    tb.appendChild(tr);
    for (const sel of [a, b]) { const o = document.createElement("option"); o.value = v.id; o.textContent = v.id; sel.appendChild(o); }
  }
  if (data.versions.length > 1) { a.value = data.versions[1].id; b.value = data.versions[0].id; }
  tb.querySelectorAll("[data-act]").forEach((btn) => btn.addEventListener("click", async () => {
    try { await api("POST", `/api/v1/index/versions/${btn.dataset.act}/activate`); $("index-msg").textContent = `Activated ${btn.dataset.act}.`; }
    catch (e) { $("index-msg").textContent = e.message; }
    refreshAll();
  }));
}

async function loadDeployment() {
  let d;
  try { d = await api("GET", "/api/v1/deployment"); } catch (e) { $("deployment").textContent = e.message; return; }
  $("deployment").textContent = JSON.stringify(d, null, 2);
  const p = d.profile || {};
  const rows = [["Profile", p.name], ["Backend", p.backend], ["Target device", p.target_device],
    ["Artifact", (p.artifact || {}).resolved_path || (p.artifact || {}).path], ["Artifact chain", d.chain_id],
    ["Index version", d.index_version], ["Answer mode", d.answer_mode], ["Rollback profile", p.rollback],
    ["Load problem", d.load_error || d.profile_error]];
  $("deploy-summary").querySelector("tbody").innerHTML = rows.filter((r) => r[1])
    .map((r) => `<tr><th>${esc(r[0])}</th><td><code>${esc(r[1])}</code></td></tr>`).join("");
  const gb = $("gates").querySelector("tbody");
  if (!d.gates) { gb.innerHTML = `<tr><td colspan="3">Not checked yet: run <code>manualqa doctor</code> on the gateway.</td></tr>`; return; }
  gb.innerHTML = (d.gates.gates || []).map((g) => `<tr><td>${esc(g.gate)} ${esc(g.title || "")}</td>
    <td><strong>${g.passed ? "PASS" : "FAIL"}</strong></td><td>${esc(g.detail)}</td></tr>`).join("")
    + `<tr><td colspan="3" class="muted">checked ${esc(d.gates.checked_at)}</td></tr>`;
}

async function loadLog() {
  const outcome = $("outcome-filter").value;
  const data = await api("GET", "/api/v1/answers?limit=50" + (outcome ? `&outcome=${outcome}` : ""));
  const tb = $("answers").querySelector("tbody"); tb.innerHTML = "";
  for (const r of data.answers) {
    const tr = document.createElement("tr"); tr.tabIndex = 0; tr.style.cursor = "pointer";
    const fb = (r.feedback || []).map((f) => (f.thumbs > 0 ? "helpful" : "not helpful") + (f.comment ? " " + f.comment : "")).join("; ");
    tr.innerHTML = `<td>${esc(r.time)}</td><td>${esc(r.question)}</td><td>${esc(r.outcome)}</td><td>${esc(r.client)}</td><td>${esc(fb)}</td>`;
    const show = async () => { $("provenance").textContent = JSON.stringify(await api("GET", `/api/v1/answers/${r.id}`), null, 2); };
    tr.addEventListener("click", show); tr.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
    tb.appendChild(tr);
  }
}

function upload(e) {
  e.preventDefault();
  const file = $("file").files[0]; if (!file) return;
  const form = new FormData(); form.append("data", file);
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "/api/v1/manuals"); xhr.setRequestHeader("X-CSRF-Token", csrf || "");
  $("upload-progress").hidden = false; $("upload-progress").value = 0; $("upload-msg").textContent = "Uploading…";
  xhr.upload.onprogress = (ev) => { if (ev.lengthComputable) $("upload-progress").value = Math.round(50 * ev.loaded / ev.total); };
  xhr.onload = () => {
    let data = {}; try { data = JSON.parse(xhr.responseText); } catch {}
    if (xhr.status !== 202) { $("upload-msg").textContent = "Upload refused: " + (data.error?.message || xhr.statusText); $("upload-progress").hidden = true; return; }
    $("upload-msg").textContent = `Ingesting ${data.file_name} (${data.pages} pages)…`;
    pollJob(data.job);
  };
  xhr.onerror = () => { $("upload-msg").textContent = "Upload failed (network)."; };
  xhr.send(form);
}

async function pollJob(id) {
  for (;;) {
    const job = await api("GET", `/api/v1/jobs/${id}`);
    if (job.total) $("upload-progress").value = 50 + Math.round(50 * job.progress / job.total);
    if (job.state === "done") {
      const r = job.result || {};
      $("upload-msg").textContent = r.version ? `Done: index version ${r.version} is active.` : "Done: no change (this file is already indexed).";
      $("upload-progress").value = 100; refreshAll(); return;
    }
    if (job.state === "failed") { $("upload-msg").textContent = "Ingest failed: " + job.message; return; }
    await new Promise((res) => setTimeout(res, 500));
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault(); $("login-msg").textContent = "";
    try { loggedIn(await api("POST", "/admin/login", {key: $("admin-key").value.trim()})); }
    catch (err) { $("login-msg").textContent = err.message; }
  });
  $("logout").addEventListener("click", async () => { await api("POST", "/admin/logout"); location.reload(); });
  $("upload-form").addEventListener("submit", upload);
  $("rollback").addEventListener("click", async () => {
    try { const r = await api("POST", "/api/v1/index/rollback"); $("index-msg").textContent = `Rolled back: ${r.active} is active.`; }
    catch (e) { $("index-msg").textContent = e.message; }
    refreshAll();
  });
  $("diff").addEventListener("click", async () => {
    const out = $("diff-out"); out.hidden = false;
    try { out.textContent = JSON.stringify(await api("GET", `/api/v1/index/diff?from=${$("diff-a").value}&to=${$("diff-b").value}`), null, 2); }
    catch (e) { out.textContent = e.message; }
  });
  $("refresh-log").addEventListener("click", loadLog);
  $("outcome-filter").addEventListener("change", loadLog);
  try { loggedIn(await api("GET", "/admin/session")); } catch { /* not logged in yet */ }
});
