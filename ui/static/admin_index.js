// manualqa admin page: index versions kept and moved (issue 48, item 9). "Remove old versions (keep N)"
// asks GET /api/v1/index/gc?keep=N what would go, names it in a confirmation, then POSTs /api/v1/index/gc
// (the function `manualqa index gc` runs: never the active version or the one a rollback returns to).
// Each version row has an Export link (GET .../versions/{id}/export, a signed archive): it is fetched
// first and saved only when the gateway answers 200; a refusal (no signing key on this gateway, a version
// that fails verification) is said in words below the list, never saved as a file. When the gateway says
// beforehand that it would refuse every export (GET /api/v1/admin/status: index.export_refusal, e.g. no
// signing key), each Export is a disabled button with the reason beside it, before anyone taps it.
// Import uploads such an archive to POST /api/v1/index/import, and the version lands in the list inactive.
// Uses $, esc, api, csrf, loadVersions, refreshAll from admin.js, bytesText from admin_status.js, t() from i18n.js.
"use strict";
let importedVersion = null; // the version the last import landed: marked in the list until the next import
let exportRefusal = null; // why the gateway would refuse any export (admin status), null: it would sign one

function exportLink(id) {
  const mark = id === importedVersion ? ` <em class="muted imported">${esc(t("admin.imported_badge"))}</em>` : "";
  if (exportRefusal) {
    const why = t("admin.export_off", {message: exportRefusal});
    return `<button type="button" class="secondary" data-export="${esc(id)}" disabled title="${esc(why)}">${esc(t("admin.export"))}</button>
    <small class="muted export-why">${esc(why)}</small>${mark}`;
  }
  return `<a class="button secondary" download data-export="${esc(id)}" href="/api/v1/index/versions/${encodeURIComponent(id)}/export"
    title="${esc(t("admin.export_title", {id}))}">${esc(t("admin.export"))}</a>${mark}`;
}

// Whether exports would be refused, from the admin status (asked with the rest of the page, and again
// with each status refresh); the rows are redrawn when that changes (a key made in a shell meanwhile).
function exportStateFrom(status) {
  const refusal = status?.index?.export_refusal || null;
  if (refusal === exportRefusal) return;
  exportRefusal = refusal;
  loadVersions();
}

async function loadExportState() {
  try { exportStateFrom(await api("GET", "/api/v1/admin/status")); } catch { /* the Export links stay as they are */ }
}

// Archives up to this size are saved from memory. A larger one (a gateway of many manuals) may not fit a
// phone's: once the gateway has said yes (200), the link itself is followed and the browser's downloads
// stream it to disk (the gateway builds it a second time). A test lowers it (manualqaExportInMemoryMax).
const EXPORT_IN_MEMORY_MAX = 256 * 1024 * 1024;

function saveAs(href, file) {
  const save = document.createElement("a");
  save.href = href; save.download = file; save.hidden = true;
  document.body.appendChild(save); save.click(); save.remove();
}

// The archive, fetched before it is saved: the link's own download would save the error's JSON body as
// the archive. It is built and signed on the gateway (seconds), then saved.
async function exportVersion(e) {
  const link = e.target.closest("a[data-export]");  // a disabled Export is a button: nothing to do
  if (!link) return;
  e.preventDefault();
  if (link.getAttribute("aria-busy") === "true") return;  // one export of a version at a time
  const id = link.dataset.export, msg = $("export-msg");
  link.setAttribute("aria-busy", "true");
  msg.classList.remove("error-msg");
  msg.textContent = t("admin.export_preparing", {id});
  try {
    const fetching = new AbortController();
    const r = await fetch(link.href, {credentials: "same-origin", signal: fetching.signal});
    if (typeof auditChanged === "function") auditChanged();  // an export is in the audit trail, refused or not
    if (!r.ok) {
      const data = r.headers.get("content-type")?.includes("json") ? await r.json() : {};
      throw new Error(data?.error?.message || r.statusText || String(r.status));
    }
    const file = /filename="([^"]+)"/.exec(r.headers.get("content-disposition") || "")?.[1] || `${id}.tar`;
    const size = Number(r.headers.get("content-length") || 0);
    if (size > (window.manualqaExportInMemoryMax ?? EXPORT_IN_MEMORY_MAX)) {
      fetching.abort();
      saveAs(link.href, file);
      msg.textContent = t("admin.export_streamed", {file, size: bytesText(size)});
    } else {
      const blob = await r.blob();
      const url = URL.createObjectURL(blob);
      saveAs(url, file);
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      msg.textContent = t("admin.export_saved", {file, size: bytesText(blob.size)});
    }
    msg.scrollIntoView({block: "nearest"});
  } catch (err) {
    msg.classList.add("error-msg");
    msg.textContent = t("admin.export_refused", {id, message: err.message});
    msg.scrollIntoView({block: "nearest"});  // below the list: on a phone, out of sight of the row tapped
  } finally {
    link.removeAttribute("aria-busy");
  }
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
  $("versions").addEventListener("click", exportVersion);  // the rows are redrawn: one listener on the table
})();
