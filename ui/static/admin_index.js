// manualqa admin page: index versions kept and moved (issue 48, item 9). "Remove old versions (keep N)"
// asks GET /api/v1/index/gc?keep=N what would go, names it in a confirmation, then POSTs /api/v1/index/gc
// (the function `manualqa index gc` runs: never the active version or the one a rollback returns to).
// Each version row has an Export link (GET .../versions/{id}/export, a signed archive); Import uploads
// such an archive to POST /api/v1/index/import, and the version lands in the list inactive.
// Uses $, esc, api, csrf, loadVersions, refreshAll from admin.js, bytesText from admin_status.js, t() from i18n.js.
"use strict";
let importedVersion = null; // the version the last import landed: marked in the list until the next import

function exportLink(id) {
  const mark = id === importedVersion ? ` <em class="muted imported">${esc(t("admin.imported_badge"))}</em>` : "";
  return `<a class="button secondary" download data-export="${esc(id)}" href="/api/v1/index/versions/${encodeURIComponent(id)}/export"
    title="${esc(t("admin.export_title", {id}))}">${esc(t("admin.export"))}</a>${mark}`;
}

function keepCount() { return Number($("gc-keep").value); }
function showKeep() { $("gc").textContent = keepCount() >= 1 ? t("admin.gc_keep_n", {n: keepCount()}) : t("admin.gc"); }

async function removeOld(e) {
  e.preventDefault();
  const keep = keepCount();
  $("gc-msg").textContent = "";
  $("gc").disabled = true;
  try {
    const plan = await api("GET", `/api/v1/index/gc?keep=${encodeURIComponent(keep)}`);
    if (!plan.removed.length) { $("gc-msg").textContent = t("admin.gc_nothing", {n: keep}); return; }
    const named = {count: plan.removed.length, size: bytesText(plan.bytes_freed)};
    if (!confirm(t("admin.gc_confirm", {...named, versions: plan.removed.join("\n"), kept: plan.kept.join(", ")}))) return;
    const done = await api("POST", "/api/v1/index/gc", {keep});
    $("gc-msg").textContent = t("admin.gc_done", {count: done.removed.length, versions: done.removed.join(", "),
      size: bytesText(done.bytes_freed)});
    refreshAll();
  } catch (err) {
    $("gc-msg").textContent = err.message;
  } finally {
    $("gc").disabled = false;
  }
}

// The archive is the request body itself (not a form): the route streams it to disk.
async function importArchive(e) {
  e.preventDefault();
  const file = $("import-file").files[0]; if (!file) return;
  $("import").disabled = true;
  $("import-msg").textContent = t("admin.import_uploading", {file: file.name});
  try {
    const r = await fetch("/api/v1/index/import", {method: "POST", credentials: "same-origin", body: file,
      headers: {"Content-Type": "application/octet-stream", "X-CSRF-Token": csrf || ""}});
    const data = r.headers.get("content-type")?.includes("json") ? await r.json() : {};
    if (typeof auditChanged === "function") auditChanged();
    if (!r.ok) throw new Error(data?.error?.message || r.statusText);
    importedVersion = data.version;
    $("import-msg").textContent = t(data.status === "imported" ? "admin.import_done" : "admin.import_present", {id: data.version});
    $("import-file").value = "";
    await loadVersions();
  } catch (err) {
    $("import-msg").textContent = t("admin.import_refused", {message: err.message});
  } finally {
    $("import").disabled = false;
  }
}

(function wireIndex() {
  $("gc-keep").addEventListener("input", showKeep);
  showKeep();
  $("gc-form").addEventListener("submit", removeOld);
  $("import-form").addEventListener("submit", importArchive);
})();
