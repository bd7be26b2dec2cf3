// manualqa admin page, part 3: the answer log a page at a time (filters by outcomes, client, manual and
// time; times in this browser's zone; a long question clipped to two lines, whole on tap), the log's
// retention setting, and the audit trail of admin actions. The API speaks UTC ISO-8601 throughout.
// Uses $, esc, api, ticket, labelCells, feedbackWord, renderProvenance from admin.js, updateExport from
// admin_ops.js, timeHtml from admin_time.js and t() from i18n.js.
"use strict";
const LOG_PAGE = 50, AUDIT_PAGE = 20;
let logOffset = 0, auditOffset = 0;

// -- times (shown by admin_time.js) -----------------------------------------------------------------
// A date or date-time typed without a zone means the admin's own clock: it is sent as UTC. Ages (7d) and
// values with a zone go as typed, and the server explains what it cannot read.
function serverTime(value) {
  const s = value.trim();
  const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?$/.exec(s);
  if (!m) return s;
  const d = new Date(`${m[1]}T${(m[2] || "00:00").padStart(5, "0")}`);  // no zone: local time
  return isNaN(d) ? s : d.toISOString();
}

// -- the answer log --------------------------------------------------------------------------------
// The outcomes ticked (none: every outcome), in the API's form: several comma-separated.
function chosenOutcomes() { return [...$("outcome-filter").querySelectorAll("input:checked")].map((box) => box.value); }

// The log's filters: the list below, its pages and the download (admin_ops.js) show the same answers.
function logQuery() {
  const q = new URLSearchParams();
  const put = (name, value) => { if (value) q.set(name, value); };
  put("outcome", chosenOutcomes().join(","));
  put("client", $("client-filter").value);
  put("manual", $("manual-filter").value);
  put("since", serverTime($("log-since").value));
  put("until", serverTime($("log-until").value));
  return q;
}

// The manual filter lists the manuals of the active version (again at each refreshAll, admin.js); a manual
// chosen before stays chosen.
async function loadManualFilter() {
  const sel = $("manual-filter"), chosen = sel.value;
  const data = await api("GET", "/api/v1/manuals");
  sel.length = 1;  // keep "all manuals"
  for (const m of data.manuals) {
    const o = document.createElement("option"); o.value = m.sha256; o.textContent = m.title || m.file_name; sel.appendChild(o);
  }
  if ([...sel.options].some((o) => o.value === chosen)) sel.value = chosen;
}

function pager(prefix, offset, shown, total, emptyText) {
  $(`${prefix}-range`).textContent = total ? t("admin.page_range", {from: offset + 1, to: offset + shown, total}) : emptyText;
  $(`${prefix}-prev`).disabled = offset === 0;
  $(`${prefix}-next`).disabled = offset + shown >= total;
}

async function loadLog() {
  const latest = ticket("log");
  let data;
  try { data = await api("GET", `/api/v1/answers?limit=${LOG_PAGE}&offset=${logOffset}&${logQuery()}`); }
  catch (e) { if (latest()) { $("log-msg").textContent = e.message; updateExport(false); } return; }
  if (!latest()) return;
  if (!data.answers.length && logOffset > 0 && data.total > 0) {  // the log shrank under this page: its last page
    logOffset = Math.floor((data.total - 1) / LOG_PAGE) * LOG_PAGE; return loadLog();
  }
  $("log-msg").textContent = ""; updateExport(true);
  const tb = $("answers").querySelector("tbody"); tb.innerHTML = "";
  for (const r of data.answers) {
    const tr = document.createElement("tr"); tr.tabIndex = 0; tr.className = "log-row"; tr.setAttribute("aria-expanded", "false");
    const fb = (r.feedback || []).map((f) => feedbackWord(f) + (f.comment ? " " + f.comment : "")).join("; ");
    const client = `admin.client.${r.client}` in PAGE_STRINGS ? t(`admin.client.${r.client}`) : r.client;
    tr.innerHTML = `<td>${timeHtml(r.time)}</td><td><span class="clip" title="${esc(r.question)}">${esc(r.question)}</span></td>
      <td>${esc(r.outcome)}</td><td>${esc(client)}</td><td>${esc(fb)}</td>`;
    // a tap shows the whole question in the row and the answer's provenance below
    const show = async () => {
      tr.setAttribute("aria-expanded", String(tr.classList.toggle("open")));
      renderProvenance(await api("GET", `/api/v1/answers/${r.id}`));
    };
    tr.addEventListener("click", show); tr.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
    tb.appendChild(tr);
  }
  labelCells($("answers"));
  pager("log", logOffset, data.answers.length, data.total, t("admin.log_empty"));
}

function filtersChanged() {
  $("outcome-any").hidden = chosenOutcomes().length > 0;
  logOffset = 0; loadLog();
}

// -- retention -------------------------------------------------------------------------------------
async function loadRetention() {
  const r = await api("GET", "/api/v1/answers/retention");
  $("retention-days").value = r.days;
  $("retention-note").textContent = (r.days ? t("admin.retention_days", {days: r.days}) : t("admin.retention_forever"))
    + (r.days !== r.configured ? " " + t("admin.retention_changed", {configured: r.configured}) : "");
}

async function setRetention(e) {
  e.preventDefault();
  try {
    const r = await api("PUT", "/api/v1/answers/retention", {days: Number($("retention-days").value)});
    $("retention-msg").textContent = r.days ? t("admin.retention_done", {days: r.days, deleted: r.deleted_last_run})
      : t("admin.retention_done_forever");
  } catch (err) { $("retention-msg").textContent = err.message; }
  loadRetention(); loadLog();
}

// -- the audit trail -------------------------------------------------------------------------------
function actorWord(a) {
  if (a.via === "none" && !a.actor) return t("admin.via.none");
  const via = ["session", "cli"].includes(a.via) ? a.via : "key";  // cli: `manualqa keys create ...` on the gateway
  return t(`admin.via.${via}`, {name: a.actor || t("admin.unknown_key")});
}

async function loadAudit() {
  const latest = ticket("audit");
  let data;
  try { data = await api("GET", `/api/v1/audit?limit=${AUDIT_PAGE}&offset=${auditOffset}`); $("audit-msg").textContent = ""; }
  catch (e) { if (latest()) $("audit-msg").textContent = e.message; return; }
  if (!latest()) return;
  const tb = $("audit").querySelector("tbody");
  tb.innerHTML = data.entries.map((a) => `<tr class="audit-${esc(a.result)}"><td>${timeHtml(a.time)}</td>
    <td>${esc(actorWord(a))}</td><td><code>${esc(a.action)}</code></td><td>${esc(a.target)}</td>
    <td><strong>${esc(t(`admin.result.${a.result}`))}</strong> <span class="muted">${esc(a.status)}</span></td>
    <td>${esc(a.detail)}</td></tr>`).join("");
  labelCells($("audit"));
  pager("audit", auditOffset, data.entries.length, data.total, t("admin.audit_empty"));
}

// After each write from this page (api(), admin.js): the newest page of the trail, once the writes settle.
let auditTimer = null;
function auditChanged() { clearTimeout(auditTimer); auditTimer = setTimeout(() => { auditOffset = 0; loadAudit(); }, 300); }

document.addEventListener("DOMContentLoaded", () => {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone) $("log-times").textContent = t("admin.times_local_zone", {zone});
  $("refresh-log").addEventListener("click", () => { loadLog(); loadManualFilter().catch(() => {}); });
  for (const id of ["outcome-filter", "client-filter", "manual-filter", "log-since", "log-until"]) $(id).addEventListener("change", filtersChanged);
  $("log-until").addEventListener("input", () => updateExport());
  $("log-prev").addEventListener("click", () => { logOffset = Math.max(0, logOffset - LOG_PAGE); loadLog(); });
  $("log-next").addEventListener("click", () => { logOffset += LOG_PAGE; loadLog(); });
  $("audit-prev").addEventListener("click", () => { auditOffset = Math.max(0, auditOffset - AUDIT_PAGE); loadAudit(); });
  $("audit-next").addEventListener("click", () => { auditOffset += AUDIT_PAGE; loadAudit(); });
  $("retention-form").addEventListener("submit", setRetention);
});
