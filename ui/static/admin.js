// manualqa admin page: cookie session (logged in with an admin key) + CSRF token on every write.
// admin_ops.js adds what once needed the gateway's shell: deployment actions, API keys, log download;
// admin_log.js the answer log (filters, pages, local times), its retention and the audit trail.
// Every string it shows comes from the page's catalogue through t() / tHtml() (ui/static/i18n.js), every
// time through timeHtml() (ui/static/admin_time.js: this browser's zone, the UTC value in its title).
"use strict";
const $ = (id) => document.getElementById(id);
let csrf = null;
let me = null; // this session: {name, role, csrf}

function esc(s) { return String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c])); }

async function api(method, url, body) {
  const opts = {method, credentials: "same-origin", headers: {}};
  if (method !== "GET") opts.headers["X-CSRF-Token"] = csrf || "";
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(url, opts);
  const data = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  // every write is in the audit trail (gateway.web.audit), refused or not: its list follows (admin_log.js)
  if (method !== "GET" && typeof auditChanged === "function") auditChanged();
  if (!r.ok) throw new Error(data?.error?.message || r.statusText);
  return data;
}

function loggedIn(session) {
  csrf = session.csrf; me = session;
  $("login-box").hidden = true; $("admin").hidden = false; $("logout").hidden = false;
  $("who").textContent = t("admin.logged_in_as", {name: session.name, role: roleWord(session.role)});
  refreshAll();
}

// The session has ended (its key revoked, here or elsewhere): back to the login form, saying why.
function loggedOut(message) {
  csrf = null; me = null;
  $("admin").hidden = true; $("logout").hidden = true; $("login-box").hidden = false;
  $("admin-key").value = ""; $("login-msg").textContent = message;
}

// A role's word on this page ("reader" / "Leser" / "读取"); the API's code when the catalogue has none.
function roleWord(role) { return `admin.role.${role}` in PAGE_STRINGS ? t(`admin.role.${role}`) : role; }

// On a phone the admin tables stack each row as a card (style.css, table.stack): each cell names its
// column, so that a row's actions (Rename, Remove, Activate, Revoke) sit in it, on screen.
function labelCells(table) {
  const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
  for (const tr of table.querySelectorAll("tbody tr")) {
    if (tr.children.length !== names.length) continue;  // a note row across the columns
    [...tr.children].forEach((td, i) => { if (names[i]) td.dataset.label = names[i]; });
  }
}

// Each loader draws only its latest answer: two refreshes in flight (two rollbacks in a row) can be
// answered out of order, and the older answer must not draw over the newer one.
const drawn = {};
function ticket(name) { const n = (drawn[name] || 0) + 1; drawn[name] = n; return () => drawn[name] === n; }

async function refreshAll() {
  await Promise.allSettled([loadManuals(), loadVersions(), loadExportState(), loadDeployment(), loadLog(), loadKeys(), loadAudit(),
    loadRetention(), loadManualFilter()]);
}

async function loadManuals() {
  const latest = ticket("manuals");
  const data = await api("GET", "/api/v1/manuals");
  if (!latest()) return;
  const tb = $("manuals").querySelector("tbody"); tb.innerHTML = "";
  for (const m of data.manuals) {
    const tr = document.createElement("tr");
    const missing = (m.pages_without_text || []);
    const renamed = m.pdf_title && m.pdf_title !== m.title ? ` title="${esc(t("admin.pdf_says", {title: m.pdf_title}))}"` : "";
    tr.innerHTML = `<td${renamed}>${esc(m.title)}</td><td><a href="${esc(m.file_url)}" target="_blank">${esc(m.file_name)}</a></td>
      <td>${esc(m.page_count)}</td><td title="${esc(m.sha256)}"><code>${esc(m.sha256.slice(0, 12))}…</code></td>
      <td>${missing.length ? esc(missing.join(", ")) : esc(t("admin.none"))}${(m.ocr_pages || []).length ? `<br><small>${esc(t("admin.read_by_ocr", {pages: m.ocr_pages.join(", ")}))}</small>` : ""}${(m.respaced_pages || []).length ? `<br><small>${esc(t("admin.respaced", {pages: m.respaced_pages.join(", ")}))}</small>` : ""}</td>
      <td><button type="button" class="secondary" data-rename="${esc(m.sha256)}" data-title="${esc(m.title)}">${esc(t("admin.rename"))}</button>
        <button type="button" class="secondary" data-del="${esc(m.sha256)}">${esc(t("admin.remove"))}</button></td>`;
    tb.appendChild(tr);
  }
  labelCells($("manuals"));
  // A display title for a PDF whose own is useless ("about:blank"); empty gives the PDF's back.
  tb.querySelectorAll("[data-rename]").forEach((b) => b.addEventListener("click", async () => {
    const title = prompt(t("admin.rename_prompt"), b.dataset.title);
    if (title === null) return;
    const url = `/api/v1/manuals/${b.dataset.rename}/title`;
    try { await (title.trim() ? api("PUT", url, {title}) : api("DELETE", url)); } catch (e) { alert(e.message); }
    loadManuals();
  }));
  tb.querySelectorAll("[data-del]").forEach((b) => b.addEventListener("click", async () => {
    if (!confirm(t("admin.remove_confirm"))) return;
    try { await api("DELETE", `/api/v1/manuals/${b.dataset.del}`); } catch (e) { alert(e.message); }
    refreshAll();
  }));
}

async function loadVersions() {
  const latest = ticket("versions");
  const data = await api("GET", "/api/v1/index/versions");
  if (!latest()) return;
  const tb = $("versions").querySelector("tbody"); tb.innerHTML = "";
  const a = $("diff-a"), b = $("diff-b"); a.innerHTML = ""; b.innerHTML = "";
  // Newest first, whatever order the API lists them in; "diff from" the previous to the newest.
  data.versions.sort((x, y) => String(y.created_at).localeCompare(String(x.created_at)));
  for (const v of data.versions) {
    const active = v.id === data.active;
    const tr = document.createElement("tr");
    tr.innerHTML = `<td><code>${esc(v.id)}</code>${active ? ` <strong>${esc(t("admin.active_version"))}</strong>` : ""}</td><td>${timeHtml(v.created_at)}</td>
      <td>${esc(v.manuals)}</td><td>${esc(v.chunks)}</td><td><code>${esc(v.parent || "")}</code></td>
      <td>${active ? "" : `<button type="button" class="secondary" data-act="${esc(v.id)}">${esc(t("admin.activate"))}</button>`}
        ${exportLink(v.id)}</td>`;
    tb.appendChild(tr);
    for (const sel of [a, b]) { const o = document.createElement("option"); o.value = v.id; o.textContent = v.id; sel.appendChild(o); }
  }
  labelCells($("versions"));
  showRollback(data);
  if (data.versions.length > 1) { a.value = data.versions[1].id; b.value = data.versions[0].id; }
  tb.querySelectorAll("[data-act]").forEach((btn) => btn.addEventListener("click", async () => {
    if (!confirm(t("admin.activate_confirm", {id: btn.dataset.act}))) return;
    try { await api("POST", `/api/v1/index/versions/${btn.dataset.act}/activate`); $("index-msg").textContent = t("admin.activated", {id: btn.dataset.act}); }
    catch (e) { $("index-msg").textContent = e.message; }
    refreshAll();
  }));
}

// "Roll back" re-activates the parent of the active version. Without one (the first version built here,
// or one imported from another gateway) or with its parent removed (gc), the button is disabled and
// says why, in its title and in words beside it (a phone shows no title); the API refuses it too (409).
function showRollback(data) {
  const active = data.versions.find((v) => v.id === data.active);
  const parent = active ? active.parent : null;
  const there = Boolean(parent) && data.versions.some((v) => v.id === parent);
  const why = !active ? t("admin.rollback_no_index") : !parent ? t("admin.rollback_no_parent", {id: active.id})
    : !there ? t("admin.rollback_parent_gone", {id: parent}) : "";
  $("rollback").disabled = !there;
  $("rollback").title = there ? t("admin.rollback_to", {id: parent}) : why;
  $("rollback-why").textContent = why;
}

function feedbackWord(f) { return t(f.thumbs > 0 ? "admin.feedback_helpful" : "admin.feedback_not_helpful"); }

// The provenance of one answer, in words: what was asked, what was shown, from which pages, made by
// which chain on which index version; the raw record stays one click away.
function renderProvenance(a) {
  const tm = a.timings || {}, ch = a.chain || {};
  const facts = [["question", a.question], ["outcome", a.outcome], ["mode", a.mode], ["client", a.client],
    ["key", a.key_name], ["index_version", a.index_version], ["profile", a.profile],
    ["backend", ch.backend], ["model", ch.model_name || ch.artifact_name || (ch.artifact || {}).path],
    ["chain_id", a.chain_id], ["time", a.time],
    // the timings by their API names (retrieval, ttft, total): QA's vocabulary
    ["timings", ["retrieval_ms", "ttft_ms", "total_ms"].filter((k) => a[k] ?? tm[k])
      .map((k) => `${k.replace("_ms", "")} ${Math.round(a[k] ?? tm[k])} ms`).join(", ")],
    ["flags", (a.flags || []).join(", ")]];
  const cites = (a.citations || []).map((c) => `<li>${esc(c.page_label
    ? t("admin.cited_page_printed", {n: c.n, manual: c.manual, page: c.page, label: c.page_label})
    : t("admin.cited_page", {n: c.n, manual: c.manual, page: c.page}))}</li>`).join("");
  const fb = (a.feedback || []).map((f) => `<li>${esc(feedbackWord(f))}${f.comment ? ": " + esc(f.comment) : ""}
    <span class="muted">${timeHtml(f.time)}</span></li>`).join("");
  const none = `<p class="muted">${esc(t("admin.none"))}</p>`;
  $("provenance").innerHTML = `<dl class="facts">${facts.filter((f) => f[1]).map((f) =>
      `<dt>${esc(t(`admin.fact.${f[0]}`))}</dt><dd>${f[0] === "time" ? timeHtml(f[1]) : esc(f[1])}</dd>`).join("")}</dl>
    <h4>${esc(t("admin.answer_shown"))}</h4><blockquote>${esc(a.answer)}</blockquote>
    <h4>${esc(t("admin.cited_pages"))}</h4>${cites ? `<ul>${cites}</ul>` : none}
    <h4>${esc(t("admin.feedback_heading"))}</h4>${fb ? `<ul>${fb}</ul>` : none}
    <details><summary>${esc(t("admin.full_record_json"))}</summary><pre>${esc(JSON.stringify(a, null, 2))}</pre></details>`;
}

function renderDiff(d) {
  const list = (items, cls, fmt) => items.length ? `<ul class="${cls}">${items.map((x) => `<li>${fmt(x)}</li>`).join("")}</ul>`
    : `<p class="muted">${esc(t("admin.none"))}</p>`;
  const named = (m) => `${esc(m.title || m.file_name)} <span class="muted">${esc(t("admin.diff_manual", {file: m.file_name, chunks: m.chunks}))}</span>`;
  const notes = [d.embedding_changed ? t("admin.diff_embedding_changed") : "",
    d.chunker_changed ? t("admin.diff_chunker_changed") : ""].filter(Boolean);
  $("diff-out").innerHTML = `<p>${tHtml("admin.diff_span_html", {a: `<code>${esc(d.a)}</code>`, chunks_a: esc(d.chunks?.a),
      b: `<code>${esc(d.b)}</code>`, chunks_b: esc(d.chunks?.b)})}</p>${notes.map((n) => `<p><strong>${esc(n)}</strong></p>`).join("")}
    <h4>${esc(t("admin.diff_added"))}</h4>${list(d.added || [], "diff-added", named)}
    <h4>${esc(t("admin.diff_removed"))}</h4>${list(d.removed || [], "diff-removed", named)}
    <h4>${esc(t("admin.diff_changed"))}</h4>${list(d.changed || [], "diff-changed", (c) => `${esc(c.file_name)} <span class="muted">${esc(
      t("admin.diff_chunks_changed", {old: c.old_chunks, new: c.new_chunks}))}</span>`)}
    <p class="muted">${esc(t("admin.diff_unchanged", {n: (d.unchanged || []).length}))}</p>
    <details><summary>${esc(t("admin.diff_full"))}</summary><pre>${esc(JSON.stringify(d, null, 2))}</pre></details>`;
}

// Several files: uploaded one after another (each becomes one ingest job and one index version).
async function upload(e) {
  e.preventDefault();
  const files = [...$("file").files]; if (!files.length) return;
  const list = $("upload-list"); list.innerHTML = "";
  $("upload").disabled = true;
  let ok = 0;
  for (const [i, file] of files.entries()) {
    const li = document.createElement("li"); li.textContent = t("admin.upload_waiting", {file: file.name}); list.appendChild(li);
    $("upload-msg").textContent = t("admin.upload_progress", {i: i + 1, n: files.length, file: file.name});
    try { li.textContent = t("admin.upload_line", {file: file.name, result: await uploadOne(file)}); ok += 1; }
    catch (err) { li.textContent = t("admin.upload_line", {file: file.name, result: err.message}); li.className = "error-msg"; }
  }
  $("upload-msg").textContent = t("admin.upload_summary", {ok, n: files.length});
  $("upload").disabled = false; refreshAll();
}

function uploadOne(file) {
  return new Promise((resolve, reject) => {
    const form = new FormData(); form.append("data", file);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/manuals"); xhr.setRequestHeader("X-CSRF-Token", csrf || "");
    $("upload-progress").hidden = false; $("upload-progress").value = 0;
    xhr.upload.onprogress = (ev) => { if (ev.lengthComputable) $("upload-progress").value = Math.round(50 * ev.loaded / ev.total); };
    xhr.onload = () => {
      let data = {}; try { data = JSON.parse(xhr.responseText); } catch {}
      if (xhr.status !== 202) { reject(new Error(t("admin.upload_refused", {message: data.error?.message || xhr.statusText}))); return; }
      pollJob(data.job).then(resolve, reject);
    };
    xhr.onerror = () => reject(new Error(t("admin.upload_network")));
    xhr.send(form);
  });
}

async function pollJob(id) {
  for (;;) {
    const job = await api("GET", `/api/v1/jobs/${id}`);
    if (job.total) $("upload-progress").value = 50 + Math.round(50 * job.progress / job.total);
    if (job.state === "done") {
      const r = job.result || {};
      $("upload-progress").value = 100;
      return r.version ? t("admin.upload_done_version", {version: r.version}) : t("admin.upload_done_unchanged");
    }
    if (job.state === "failed") throw new Error(t("admin.ingest_failed", {message: job.message}));
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
    if (!confirm(t("admin.rollback_confirm"))) return;
    try { const r = await api("POST", "/api/v1/index/rollback"); $("index-msg").textContent = t("admin.rolled_back", {id: r.active}); }
    catch (e) { $("index-msg").textContent = e.message; }
    refreshAll();
  });
  $("diff").addEventListener("click", async () => {
    const out = $("diff-out"); out.hidden = false;
    try { renderDiff(await api("GET", `/api/v1/index/diff?from=${encodeURIComponent($("diff-a").value)}&to=${encodeURIComponent($("diff-b").value)}`)); }
    catch (e) { out.textContent = e.message; }
  });
  try { loggedIn(await api("GET", "/admin/session")); } catch { /* not logged in yet */ }
});
