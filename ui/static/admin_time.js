// manualqa admin page: one way to show a time. The API speaks UTC ISO-8601 throughout; every admin script
// shows a time in this browser's zone and the page's language through timeHtml (the answer log, index
// versions, keys, the audit trail, the unanswered view, the status panel, the deployment's gates), with
// the UTC value kept in the <time>'s datetime and title (hover, or the full record below).
// Loaded after i18n.js and before the other admin scripts.
"use strict";

// A time as the admin reads it: medium date and time in this browser's zone; what is not a time, as given.
function clockTime(iso) {
  const d = new Date(iso);
  if (!iso || isNaN(d)) return String(iso ?? "");
  return d.toLocaleString(document.documentElement.lang || undefined, {dateStyle: "medium", timeStyle: "medium"});
}

// A <time> in local time; the UTC value stays in its datetime and title. Nothing for no time.
function timeHtml(iso) {
  if (!iso) return "";
  return `<time datetime="${esc(iso)}" title="${esc(iso)}">${esc(clockTime(iso))}</time>`;
}
