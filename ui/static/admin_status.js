// manualqa admin page: the system's state in one panel (issue 48, item 9), from GET /api/v1/admin/status:
// disk free under the data directory, this process's memory, the generation queue, the runtime and its
// worker, the active index version and the answer log's size. Loads when opened, then every 10 s while
// it stays open. States and modes are the gateway's codes (as /health says them).
// Uses $, esc, api, ticket from admin.js, exportStateFrom from admin_index.js, timeHtml from admin_time.js and
// t() / tHtml() from i18n.js.
"use strict";
let statusTimer = null;

function bytesText(n) {
  if (n == null) return "?";
  const units = [["terabyte", 1e12], ["gigabyte", 1e9], ["megabyte", 1e6], ["kilobyte", 1e3]];
  const [unit, size] = units.find(([, s]) => n >= s) || ["byte", 1];
  return new Intl.NumberFormat(PAGE_LANG, {style: "unit", unit, maximumFractionDigits: 1}).format(n / size);
}

function durationText(s) {
  if (s == null) return "?";
  const [unit, size] = s >= 86400 ? ["day", 86400] : s >= 3600 ? ["hour", 3600] : s >= 60 ? ["minute", 60] : ["second", 1];
  return new Intl.NumberFormat(PAGE_LANG, {style: "unit", unit, unitDisplay: "long", maximumFractionDigits: 1}).format(s / size);
}

function statusRows(s) {
  const w = s.runtime.worker || {};
  const worker = w.pid ? t("admin.status_worker", {pid: w.pid, restarts: w.restarts ?? 0, crashes: (w.recent_crashes || []).length}) : "";
  const answers = Object.entries(s.answers).filter(([, n]) => n).map(([o, n]) => `${o} ${n}`).join(" · ");
  return [
    ["gateway", s.ready ? t("admin.status_ready") : t("admin.status_loading")],
    ["load_error", s.load_error],
    ["process", t("admin.status_process_value", {pid: s.pid, uptime: durationText(s.uptime_s)})],
    ["memory", t("admin.status_memory_value", {rss: bytesText(s.memory.rss_bytes), peak: bytesText(s.memory.peak_rss_bytes),
      total: bytesText(s.memory.machine_total_bytes)})],
    ["disk", t("admin.status_disk_value", {free: bytesText(s.disk.free_bytes), total: bytesText(s.disk.total_bytes), path: s.disk.path})],
    ["queue", t("admin.status_queue_value", {waiting: s.queue.waiting, running: s.queue.running, capacity: s.queue.capacity})],
    ["runtime", [s.runtime.state, s.runtime.backend, s.runtime.reason, worker].filter(Boolean).join(" — ")],
    ["answer_mode", s.answer_mode],
    ["index", s.index.active ? t("admin.status_index_value", {active: s.index.active, n: s.index.versions}) : t("admin.status_none")],
    ["answer_log", t("admin.status_log_value", {rows: s.answer_log.rows, size: bytesText(s.answer_log.db_bytes)})],
    ["answers", answers || t("admin.status_none")],
  ];
}

async function loadStatus() {
  const latest = ticket("status");
  let s;
  try { s = await api("GET", "/api/v1/admin/status"); } catch (e) {
    if (latest()) $("status-msg").textContent = e.message;
    return;
  }
  if (!latest()) return;
  exportStateFrom(s);  // admin_index.js: Export enabled or not, as the gateway says now
  $("status-msg").textContent = "";
  $("status-table").querySelector("tbody").innerHTML = statusRows(s).filter((r) => r[1])
    .map(([key, value]) => `<tr data-key="${esc(key)}"><th>${esc(t(`admin.status.${key}`))}</th><td>${esc(value)}</td></tr>`).join("")
    + `<tr><td colspan="2" class="muted">${tHtml("admin.status_as_of", {time: timeHtml(s.time)})}</td></tr>`;
  $("status-summary").textContent = t("admin.status_summary", {
    state: s.ready ? t("admin.status_ready") : t("admin.status_loading"), free: bytesText(s.disk.free_bytes)});
}

(function wireStatus() {
  $("status-box").addEventListener("toggle", () => {
    clearInterval(statusTimer); statusTimer = null;
    if (!$("status-box").open) return;
    loadStatus();
    statusTimer = setInterval(() => { if (csrf) loadStatus(); }, 10000);
  });
  $("refresh-status").addEventListener("click", loadStatus);
})();
