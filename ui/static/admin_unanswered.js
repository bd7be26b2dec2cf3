// manualqa admin page: what technicians ask that the manuals do not answer (issue 48, item 9), from
// GET /api/v1/admin/unanswered: questions that ended not found, were voted not helpful or were asked
// again, grouped by meaning, with counts per manual and per ISO week and the passages that were shown.
// The section loads when it is opened (and on Refresh or a filter change), not with the rest of the page.
// Uses $, esc, api, ticket from admin.js, timeHtml from admin_time.js and t() / tHtml() from i18n.js.
"use strict";

// A <select>'s options: "all" first, then [value, label] pairs; the choice survives a redraw.
function fillChoices(id, pairs, allLabel) {
  const sel = $(id), keep = sel.value;
  sel.innerHTML = `<option value="">${esc(allLabel)}</option>`
    + pairs.map(([v, label]) => `<option value="${esc(v)}">${esc(label)}</option>`).join("");
  sel.value = pairs.some(([v]) => v === keep) ? keep : "";
}

function reasonsText(reasons) {
  return Object.entries(reasons).map(([r, n]) => `${t(`admin.reason.${r}`)} ${n}`).join(" · ");
}

function manualName(m) { return m.title || m.manual || t("admin.unanswered_no_manual"); }

function renderGroup(g) {
  const questions = g.questions.map((q) => `<li>${timeHtml(q.time)} —
    ${esc(q.question)} <span class="badge ${esc(q.outcome)}">${esc(q.outcome)}</span>
    <small class="muted">${esc(q.reasons.map((r) => t(`admin.reason.${r}`)).join(", "))} · ${esc(q.client)}</small></li>`).join("");
  const passages = g.passages.map((p) => `<li><a href="${esc(p.pdf_url)}" target="_blank">${esc(
    t("admin.unanswered_page", {manual: p.title || p.manual || "", page: p.page}))}</a>${p.heading ? ` — <em>${esc(p.heading)}</em>` : ""}
    ${p.text ? `<br><small>${esc(p.text.length > 300 ? `${p.text.slice(0, 300)}…` : p.text)}</small>` : ""}</li>`).join("");
  const meta = [esc(reasonsText(g.reasons)), esc(g.manuals.map(manualName).join(", ")), esc(g.weeks.join(", ")),
    tHtml("admin.unanswered_last", {time: timeHtml(g.last)})].filter(Boolean).join(" · ");
  return `<article class="unanswered-group" data-count="${esc(g.count)}">
    <h3><span class="badge not_found">${esc(t("admin.unanswered_times", {n: g.count}))}</span> ${esc(g.question)}</h3>
    <p class="muted">${meta}</p>
    <details class="group-questions"><summary>${esc(t("admin.unanswered_questions", {n: g.questions.length}))}</summary><ul>${questions}</ul></details>
    <details class="group-passages"><summary>${esc(t("admin.unanswered_passages", {n: g.passages.length}))}</summary><ul>${passages}</ul></details>
  </article>`;
}

async function loadUnanswered() {
  const latest = ticket("unanswered");
  const query = new URLSearchParams();
  for (const [name, id] of [["since", "unanswered-since"], ["manual", "unanswered-manual"], ["week", "unanswered-week"]]) {
    const value = $(id).value.trim();
    if (value) query.set(name, value);
  }
  let d;
  try { d = await api("GET", `/api/v1/admin/unanswered?${query}`); } catch (e) {
    if (latest()) $("unanswered-msg").textContent = e.message;
    return;
  }
  if (!latest()) return;
  $("unanswered-msg").textContent = "";
  $("unanswered-count").textContent = t("admin.unanswered_count", {n: d.questions, groups: d.groups.length + d.more_groups});
  fillChoices("unanswered-manual", d.by_manual.filter((m) => m.sha256)
    .map((m) => [m.sha256, t("admin.unanswered_option", {name: manualName(m), n: m.count})]), t("admin.unanswered_all_manuals"));
  fillChoices("unanswered-week", d.by_week.map((w) => [w.week, t("admin.unanswered_option", {name: w.week, n: w.count})]),
    t("admin.unanswered_all_weeks"));
  const notes = [];
  if (d.grouped_by === "text") notes.push(`<p class="muted">${esc(t("admin.unanswered_by_text"))}</p>`);
  if (!d.groups.length) notes.push(`<p>${esc(t("admin.unanswered_none"))}</p>`);
  if (d.more_groups) notes.push(`<p class="muted">${esc(t("admin.unanswered_more", {n: d.more_groups}))}</p>`);
  $("unanswered-groups").innerHTML = d.groups.map(renderGroup).join("") + notes.join("");
}

(function wireUnanswered() {
  $("unanswered-box").addEventListener("toggle", () => { if ($("unanswered-box").open) loadUnanswered(); });
  $("refresh-unanswered").addEventListener("click", loadUnanswered);
  $("unanswered-manual").addEventListener("change", loadUnanswered);
  $("unanswered-week").addEventListener("change", loadUnanswered);
  $("unanswered-since").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); loadUnanswered(); } });
})();
