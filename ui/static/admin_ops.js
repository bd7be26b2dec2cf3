// manualqa admin page, part 2: what once needed a shell on the gateway (issue 10). Deployment (the
// profile in force, its switch, the doctor, the answer mode), API keys and the answer log download.
// Uses $, esc, api, me, loggedOut, roleWord from admin.js, timeHtml from admin_time.js and t() / tHtml()
// from i18n.js; every write carries the session's X-CSRF-Token (api()).
"use strict";
let keyRows = [];

// Gate 1's detail quotes what the model wrote for the smoke prompt, and a tiny model writes nonsense
// there: the table says that it answered, in how many tokens and seconds. The reply itself stays in the
// record (evidence.smoke, under "Full record") for QA.
function gateDetail(g) {
  const smoke = (g.evidence || {}).smoke;
  if (g.gate !== 1 || g.status !== "pass" || !smoke) return g.detail;
  const stats = smoke.stats || {}, n = stats.output_tokens;
  const s = stats.total_ms != null ? Number(stats.total_ms) / 1000 : null;
  const tokens = n != null ? t(n === 1 ? "admin.tokens_one" : "admin.tokens_many", {n}) : "";
  const time = s != null ? t("admin.seconds", {n: s >= 1 ? s.toFixed(1) : Math.max(s, 0.01).toFixed(2)}) : "";
  const took = tokens && time ? t("admin.took", {tokens, time}) : tokens || time;
  // the head is the gate's own detail, from the gateway (in English)
  const head = String(g.detail || "").replace(/ and answered: [\s\S]*$/, "");
  return took ? t("admin.smoke_answered_took", {detail: head, took}) : t("admin.smoke_answered", {detail: head});
}

// `note`: markup (its time is a <time>, admin_time.js)
function renderGates(gates, note) {
  const verdict = (g) => t(`admin.verdict.${{pass: "pass", fail: "fail"}[g.status] || (g.passed ? "pass" : "not_run")}`);
  $("gates").querySelector("tbody").innerHTML = (gates || []).map((g) => `<tr class="gate-${esc(g.status)}">
    <td>${esc(g.gate)} ${esc(g.title || "")}</td><td><strong>${esc(verdict(g))}</strong></td><td>${esc(gateDetail(g))}</td></tr>`).join("")
    + `<tr><td colspan="3" class="muted">${note}</td></tr>`;
  labelCells($("gates"));
}

function describeSwitch(s) {
  if (!s) return "";
  if (s.status === "unchanged") return t("admin.switch_unchanged", {profile: s.profile});
  const moved = s.from || s.to ? ` (${s.from || "?"} → ${s.to || "?"})` : "";
  const key = {switched: "admin.switch_switched", reloaded: "admin.switch_reloaded"}[s.status] || "admin.switch_refused";
  return t(key, {moved, detail: s.detail || ""});
}

async function loadDeployment() {
  let d;
  try { d = await api("GET", "/api/v1/deployment"); } catch (e) { $("deployment").textContent = e.message; return; }
  $("deployment").textContent = JSON.stringify(d, null, 2);
  const p = d.profile || {}, last = d.last_switch;
  // the values are the gateway's own (states, modes, reasons: its codes and its English); a time is markup
  const rows = [["profile", p.name], ["backend", p.backend], ["target_device", p.target_device],
    ["artifact", (p.artifact || {}).resolved_path || (p.artifact || {}).path], ["artifact_chain", d.chain_id],
    ["index_version", d.index_version], ["rollback_profile", p.rollback], // the answer mode: its own control below
    ["last_switch", last ? {html: `${esc(describeSwitch(last))} (${timeHtml(last.at)})`} : t("admin.fact.last_switch_none")],
    ["runtime", d.runtime ? [d.runtime.state, d.runtime.isolation && `(${d.runtime.isolation})`, d.runtime.reason].filter(Boolean).join(" ") : ""],
    ["load_problem", d.load_error || d.profile_error],
    ["answers_served", d.answer_mode_reason ? `${d.answer_mode}: ${d.answer_mode_reason}` : d.answer_mode],
    ["gate4", d.qualification ? `${d.qualification.status}: ${d.qualification.detail}` : ""]];
  $("deploy-summary").querySelector("tbody").innerHTML = rows.filter((r) => r[1])
    .map((r) => `<tr><th>${esc(t(`admin.fact.${r[0]}`))}</th><td>${r[1].html ?? `<code>${esc(r[1])}</code>`}</td></tr>`).join("");
  $("answer-mode").value = d.answer_mode_configured || d.answer_mode;
  if (!d.gates) {
    $("gates").querySelector("tbody").innerHTML = `<tr><td colspan="3">${esc(t("admin.gates_not_checked"))}</td></tr>`;
  } else renderGates(d.gates.gates, tHtml("admin.gates_checked", {at: timeHtml(d.gates.checked_at)}));
}

async function busy(button, msg, text, work) {
  button.disabled = true; msg.textContent = text;
  try { msg.textContent = await work(); } catch (e) { msg.textContent = e.message; }
  finally { button.disabled = false; }
  loadDeployment();
}

function reloadProfile() {
  return busy($("reload-profile"), $("deploy-msg"), t("admin.checking_profile"),
    async () => describeSwitch(await api("POST", "/api/v1/deployment/reload")));
}

function runDoctor() {
  return busy($("run-doctor"), $("deploy-msg"), t("admin.doctor_running"),
    async () => {
      const r = await api("POST", "/api/v1/deployment/doctor");
      renderGates(r.gates, tHtml("admin.gates_checked", {at: timeHtml(r.checked_at)}));
      const which = (status) => r.gates.filter((g) => g.status === status).map((g) => g.gate).join(", ");
      const verdict = r.passed ? t("admin.doctor_all_pass")
        : [which("fail") && t("admin.doctor_failed", {gates: which("fail")}),
          which("not run") && t("admin.doctor_not_run", {gates: which("not run")})].filter(Boolean).join(", ");
      return t("admin.doctor_result", {profile: r.profile, verdict})
        + (r.warning ? " " + t("admin.doctor_warning", {warning: r.warning}) : "");
    });
}

async function setMode(e) {
  e.preventDefault();
  try {
    const r = await api("POST", "/api/v1/deployment/answer-mode", {mode: $("answer-mode").value});
    $("mode-msg").textContent = t("admin.mode_now", {mode: r.answer_mode, previous: r.previous});
  } catch (err) { $("mode-msg").textContent = err.message; }
  loadDeployment();
}

// -- API keys ------------------------------------------------------------------------------------
async function loadKeys() {
  keyRows = (await api("GET", "/api/v1/keys")).keys;
  const tb = $("keys").querySelector("tbody"); tb.innerHTML = "";
  for (const k of [...keyRows].reverse()) { // newest first
    const name = k.name.split("@revoked-")[0];
    const tr = document.createElement("tr");
    if (k.revoked) tr.className = "revoked";
    tr.innerHTML = `<td><code>${esc(name)}</code>${me && !k.revoked && name === me.name ? ` <strong>${esc(t("admin.this_session"))}</strong>` : ""}</td>
      <td>${esc(roleWord(k.role))}</td><td>${timeHtml(k.created)}</td><td>${k.last_used ? timeHtml(k.last_used) : esc(t("admin.never"))}</td>
      <td>${k.revoked ? tHtml("admin.revoked_at", {time: timeHtml(k.revoked)}) : esc(t("admin.key_active"))}</td>
      <td>${k.revoked ? "" : `<button type="button" class="secondary" data-revoke="${esc(k.name)}">${esc(t("admin.revoke"))}</button>`}</td>`;
    tb.appendChild(tr);
  }
  labelCells($("keys"));
  tb.querySelectorAll("[data-revoke]").forEach((b) => b.addEventListener("click", () => revokeKey(b.dataset.revoke)));
  const active = keyRows.filter((k) => !k.revoked);
  $("keys-count").textContent = t("admin.keys_count", {active: active.length, admins: active.filter((k) => k.role === "admin").length});
}

function revokeText(name) {
  const row = keyRows.find((k) => k.name === name && !k.revoked) || {};
  const admins = keyRows.filter((k) => k.role === "admin" && !k.revoked).length;
  let text = t("admin.revoke_confirm", {name});
  if (me && name === me.name) text += "\n\n" + t("admin.revoke_own");
  if (row.role === "admin" && admins === 1) text += "\n\n" + t("admin.revoke_last_admin");
  return text;
}

async function revokeKey(name) {
  if (!confirm(revokeText(name))) return;
  try {
    const r = await api("POST", `/api/v1/keys/${encodeURIComponent(name)}/revoke`);
    if (r.own_key) { loggedOut(t("admin.revoked_own", {name})); return; }
    $("key-msg").textContent = t("admin.revoked", {name});
  } catch (e) { $("key-msg").textContent = e.message; }
  loadKeys();
}

async function createKey(e) {
  e.preventDefault();
  $("key-msg").textContent = "";
  try {
    const r = await api("POST", "/api/v1/keys", {name: $("key-name").value.trim(), role: $("key-role").value});
    $("new-key-name").textContent = `${r.name} (${roleWord(r.role)})`;
    $("new-key-value").value = r.key; $("copy-msg").textContent = "";
    $("new-key").hidden = false; $("key-name").value = "";
    $("new-key-value").focus(); $("new-key-value").select();
  } catch (err) { $("key-msg").textContent = err.message; }
  loadKeys();
}

// The page is plain http on a LAN (not a secure context): the clipboard API may be missing.
async function copyKey() {
  const input = $("new-key-value");
  let copied = false;
  try { await navigator.clipboard.writeText(input.value); copied = true; } catch { /* fall back below */ }
  if (!copied) { input.focus(); input.select(); copied = document.execCommand("copy"); }
  $("copy-msg").textContent = copied ? t("admin.copied") : t("admin.copy_by_hand");
}

function hideKey() { $("new-key-value").value = ""; $("new-key").hidden = true; $("copy-msg").textContent = ""; }

// -- answer log download ---------------------------------------------------------------------------
// The link follows the log's filters (logQuery, admin_log.js); it is off while the server refuses them.
// While typing, a rough check (an age or an ISO date); the server's answer on change decides (loadLog).
const SINCE_RE = /^\s*(\d+\s*[smhdw]|\d{4}-\d{2}-\d{2}([T ][\d:.]+)?(Z|[+-]\d{2}:?\d{2})?)\s*$/;

function updateExport(ok = !$("log-msg").textContent) {
  const link = $("export-link"), q = logQuery();
  q.set("format", $("export-format").value);
  if (ok) link.href = `/api/v1/answers/export?${q}`; else link.removeAttribute("href");
  link.setAttribute("aria-disabled", String(!ok));
}

document.addEventListener("DOMContentLoaded", () => {
  $("reload-profile").addEventListener("click", reloadProfile);
  $("run-doctor").addEventListener("click", runDoctor);
  $("mode-form").addEventListener("submit", setMode);
  $("key-form").addEventListener("submit", createKey);
  $("copy-key").addEventListener("click", copyKey);
  $("hide-key").addEventListener("click", hideKey);
  $("export-format").addEventListener("change", () => updateExport());
  $("log-since").addEventListener("input", (e) => updateExport(!e.target.value.trim() || SINCE_RE.test(e.target.value)));
});
