// manualqa admin page: a question tried on an index version before activating it (issue 48, item 9),
// through POST /api/v1/admin/try. The answer is that version's search and quoted evidence, marked as a
// trial; the active version keeps serving and nothing is written to the answer log.
// Uses $, esc, api from admin.js and t() from i18n.js; the POST carries the session's X-CSRF-Token (api()).
"use strict";

async function loadTrialVersions() {
  const latest = ticket("trial-versions");
  let data;
  try { data = await api("GET", "/api/v1/index/versions"); } catch (e) { $("trial-msg").textContent = e.message; return; }
  if (!latest()) return;
  const sel = $("trial-version"), keep = sel.value;
  // the versions that are not active first: trying one before activating it is what this is for
  const ordered = [...data.versions].sort((a, b) => (a.id === data.active) - (b.id === data.active)
    || String(b.created_at).localeCompare(String(a.created_at)));
  sel.innerHTML = ordered.map((v) => `<option value="${esc(v.id)}">${esc(
    v.id === data.active ? t("admin.trial_active", {id: v.id}) : v.id)}</option>`).join("");
  if (ordered.some((v) => v.id === keep)) sel.value = keep;
}

function renderTrial(r) {
  const a = r.answer;
  const cites = a.citations.map((c) => `<li><a href="${esc(c.pdf_url)}" target="_blank">${esc(
    t("admin.unanswered_page", {manual: c.title || c.manual, page: c.page}))}</a>
    <br><small>${esc((c.sentences || []).join(" ") || c.passage)}</small></li>`).join("");
  return `<p><strong class="trial-badge">${esc(t("admin.trial_badge", {version: r.version, active: r.active || "-"}))}</strong></p>
    <p><span class="badge ${esc(a.outcome)}">${esc(a.outcome)}</span> <code>${esc(a.index_version)}</code></p>
    <p class="trial-answer">${esc(a.answer)}</p>
    ${cites ? `<ul class="trial-citations">${cites}</ul>` : `<p class="muted">${esc(t("admin.trial_no_citations"))}</p>`}`;
}

async function tryQuestion(e) {
  e.preventDefault();
  const version = $("trial-version").value, question = $("trial-question").value.trim();
  if (!version || !question) return;
  $("trial-msg").textContent = "";
  $("trial-out").hidden = false;
  $("trial-out").textContent = t("admin.trial_asking", {version});
  $("trial-ask").disabled = true;
  try {
    $("trial-out").innerHTML = renderTrial(await api("POST", "/api/v1/admin/try", {question, version}));
  } catch (err) {
    $("trial-out").hidden = true;
    $("trial-msg").textContent = err.message;
  } finally {
    $("trial-ask").disabled = false;
  }
}

(function wireTrial() {
  $("trial-box").addEventListener("toggle", () => { if ($("trial-box").open) loadTrialVersions(); });
  $("trial-form").addEventListener("submit", tryQuestion);
})();
