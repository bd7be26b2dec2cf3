// manualqa technician page: ask, stream the answer, show citations, give feedback. No framework.
// Every string it shows comes from the page's catalogue through t() (ui/static/i18n.js).
"use strict";
const $ = (id) => document.getElementById(id);
const RECENT_KEY = "manualqa.recent";
let controller = null;
let currentAnswerId = null;
let drafting = false;  // the model is writing: its text is kept off screen until it is checked
let draftWords = 0;  // words of the draft so far (the progress shown instead of the text)

let csrf = null;  // set when this browser also holds an admin session (its cookie rides along)

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const key = localStorage.getItem("manualqa.key");
  if (key) h["Authorization"] = "Bearer " + key;
  if (csrf) h["X-CSRF-Token"] = csrf;
  return h;
}

// POST JSON; an admin logged in on /admin in this browser sends its session cookie, and the
// gateway then wants that session's CSRF token: fetch it once and retry.
async function postJson(url, body, extra, signal) {
  const send = () => fetch(url, {method: "POST", signal, headers: headers(Object.assign(
    {"Content-Type": "application/json"}, extra || {})), body: JSON.stringify(body)});
  let r = await send();
  if (r.status === 403 && !csrf) {
    let code = null;
    try { code = (await r.clone().json()).error.code; } catch {}
    if (code === "csrf_failed") {
      const s = await fetch("/admin/session", {credentials: "same-origin"});
      if (s.ok) { csrf = (await s.json()).csrf; r = await send(); }
    }
  }
  return r;
}

function escapeHtml(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// The passage with the cited sentences wrapped in <mark>.
function highlight(text, sentences) {
  let html = escapeHtml(text);
  for (const s of sentences || []) {
    const sentence = typeof s === "string" ? s : (s.text || "");
    if (!sentence || sentence.length < 8) continue;
    const esc = escapeHtml(sentence);
    const i = html.indexOf(esc);
    if (i >= 0) html = html.slice(0, i) + "<mark>" + esc + "</mark>" + html.slice(i + esc.length);
  }
  return html;
}

// A safe Markdown subset for answers: the text is escaped first, then only paragraphs, line
// breaks, "-"/"*"/"1." lists, **bold** and `code` become markup; "[n]" becomes a link to card n
// when passage n is among the cards shown (an invented marker stays plain text).
function renderAnswer(text, known) {
  const inline = (s) => escapeHtml(s)
    .replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\[(\d{1,3})\]/g, (m, n) => (known.has(Number(n)) ? `<a class="cite" href="#cite-${n}">[${n}]</a>` : m));
  const kind = (l) => (/^\s*[-*•]\s+/.test(l) ? "ul" : /^\s*\d{1,3}[.)]\s+/.test(l) ? "ol" : "p");
  const out = [];
  for (const block of String(text || "").split(/\n\s*\n/)) {
    let run = [], runKind = null;  // consecutive lines of one kind: a paragraph or one list
    const close = () => {
      if (!run.length) return;
      if (runKind === "p") out.push("<p>" + run.map(inline).join("<br>") + "</p>");
      else out.push(`<${runKind}>` + run.map((l) => "<li>" + inline(l.replace(/^\s*(?:[-*•]|\d{1,3}[.)])\s+/, ""))
        + "</li>").join("") + `</${runKind}>`);
      run = [];
    };
    for (const line of block.split("\n").filter((l) => l.trim())) {
      if (kind(line) !== runKind) { close(); runKind = kind(line); }
      run.push(line);
    }
    close();
  }
  return out.join("");
}

function showAnswer(text, citations) {
  const known = new Set((citations || []).filter((c) => !c.supporting).map((c) => Number(c.n)));
  $("answer").innerHTML = renderAnswer(text, known);
}

// "page 12 (printed 11)": the PDF page (what the link opens) and, when the PDF labels its pages
// differently, the number printed on the paper page the technician may be holding.
function pageText(c) {
  return c.page_label ? t("tech.page_printed", {page: c.page, label: c.page_label}) : t("tech.page", {page: c.page});
}

// A passage read from the page image (a scan) by OCR: its words may be misread, so the technician
// checks the page before trusting a number.
function ocrNote(c) {
  if (c.source !== "ocr") return "";
  const note = typeof c.ocr_confidence === "number"
    ? t("tech.ocr_note_confidence", {confidence: Math.round(c.ocr_confidence)}) : t("tech.ocr_note");
  return `<div class="ocr-note" title="${escapeHtml(t("tech.ocr_title"))}">${escapeHtml(note)}</div>`;
}

// The opening words of a passage, at most `max` characters, ending where a word ends (never mid-word).
function openingWords(text, max = 200) {
  const t = String(text ?? "").replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  const space = t.lastIndexOf(" ", max);  // the space at `max` itself ends the last whole word
  return t.slice(0, space > 0 ? space : max);
}

// "Open page N" opens the page viewer (/viewer: pdf.js, since phones ignore #page=N on a PDF) at that
// page with the cited sentences to highlight. A passage nothing was cited from (a not-found answer's
// closest passage, a "Closest passage:" card) gives its opening words and closest=1, so that the
// viewer says "closest passage", not "cited sentence". The raw PDF stays one tap away.
function viewerUrl(c) {
  const q = new URLSearchParams({manual: c.manual_sha256});
  const cited = (c.cited_sentences || c.sentences || []).map((s) => (typeof s === "string" ? s : s.text || "")).filter(Boolean);
  if (cited.length) for (const s of cited.slice(0, 3)) q.append("q", s.slice(0, 300));
  else { q.append("q", openingWords(c.text ?? c.passage)); q.set("closest", "1"); }
  return `/viewer?${q}#page=${c.page}`;
}

// Evidence is quoted in the manual's language, whatever the page's: a passage in another language says
// which ("in Chinese", "auf Chinesisch", "中文原文"), and its quote carries lang= for the right glyphs.
// "" (an index written before languages) says nothing.
function passageLanguage(c) {
  const code = /^[a-z]{2,3}$/.test(c.language || "") ? c.language : "";
  const other = code && code !== PAGE_LANG
    ? ` <span class="lang-note">${escapeHtml(t("tech.in_language", {language: languageName(code)}))}</span>` : "";
  return {code, other};
}

function card(c, label) {
  const url = c.pdf_url || `/api/v1/manuals/${c.manual_sha256}/file#page=${c.page}`;
  const div = document.createElement("article");
  div.className = "card";
  if (c.n !== undefined && !c.supporting) div.id = `cite-${c.n}`;
  const lang = passageLanguage(c);
  div.innerHTML = `<h3>${label ? escapeHtml(label) + " " : ""}${escapeHtml(c.title || c.manual)}</h3>
    <div class="meta">${escapeHtml(pageText(c))}${c.heading ? " · " + escapeHtml(c.heading) : ""}${lang.other}</div>${ocrNote(c)}
    <blockquote${lang.code ? ` lang="${lang.code}"` : ""}>${highlight(c.text ?? c.passage ?? "", c.cited_sentences || c.sentences)}</blockquote>
    <a class="button secondary open-page" href="${escapeHtml(viewerUrl(c))}">${escapeHtml(t("tech.open_page", {page: c.page}))}</a>
    <a class="open-pdf" href="${escapeHtml(url)}" target="_blank" rel="noopener">${escapeHtml(t("tech.whole_pdf"))}</a>`;
  return div;
}

async function loadManuals() {
  try {
    const r = await fetch("/api/v1/manuals", {headers: headers()});
    if (!r.ok) return;
    const data = await r.json();
    const sel = $("manual");
    for (const m of data.manuals) {
      const o = document.createElement("option");
      o.value = m.file_name; o.textContent = t("tech.manual_option", {title: m.title, pages: m.page_count});
      sel.appendChild(o);
    }
  } catch (e) { /* offline page still works without the filter */ }
}

function recent() { try { return JSON.parse(localStorage.getItem(RECENT_KEY) || "[]"); } catch { return []; } }
function remember(q) {
  const list = [q, ...recent().filter((x) => x !== q)].slice(0, 8);
  localStorage.setItem(RECENT_KEY, JSON.stringify(list));
  renderRecent();
}
function renderRecent() {
  const ul = $("recent"); ul.innerHTML = "";
  for (const q of recent()) {
    const li = document.createElement("li"); const b = document.createElement("button");
    b.type = "button"; b.textContent = q; b.onclick = () => { $("question").value = q; ask(); };
    li.appendChild(b); ul.appendChild(li);
  }
}

const NOT_FOUND_WHY = t("tech.notfound_why");
const MAX_QUESTION_CHARS = 2000;  // the API's limit (gateway/answer/request.py MAX_QUESTION_CHARS)

// A question over the API's limit is refused here, in words, not cut silently by the box.
function showTooLong(question) {
  $("too-long").textContent = t("tech.question_too_long", {n: question.length, max: MAX_QUESTION_CHARS});
  $("too-long").hidden = false; $("question").focus();
}
const EVIDENCE_WHY = t("tech.evidence_why");

function resetResult() {
  $("failure").hidden = true; $("notfound-why").textContent = NOT_FOUND_WHY;
  $("result").hidden = false; $("answer").hidden = false; $("answer").textContent = ""; $("cards").innerHTML = "";
  $("answer").className = ""; $("evidence-note").hidden = true; $("evidence-why").textContent = EVIDENCE_WHY;
  $("draft-box").hidden = true; $("draft-box").open = false; $("draft").textContent = "";
  drafting = false;
  $("flags").textContent = ""; $("notfound").hidden = true; $("feedback").hidden = true;
  $("fb-status").textContent = ""; $("comment").value = ""; showVote(0); $("outcome").className = "badge"; $("outcome").textContent = "…";
  $("meta").textContent = t("tech.meta.searching"); $("meta").title = ""; currentAnswerId = null;
}

// Flags in words a technician can act on (tech.flag.<name> in the catalogue); the raw flag stays in the
// answer log for QA. These say nothing on the page:
const SILENT_FLAGS = new Set(["citations_inferred", "consumer_closed", "weak_evidence",
  "searched_named_manuals",  // the cards name the manual; a note on every answer that names one is noise
  "quantity_not_in_evidence", "value_not_for_question", "values_not_in_passages",  // the answer text says what is missing
  "max_tokens_reduced", "passages_dropped_to_fit", "passage_truncated_to_fit"]);
// Notes about edits to the model's text: moot when the evidence is shown instead of that text.
const ABOUT_THE_DRAFT = new Set(["unsupported_sentences_removed", "dropped_invalid_citations", "no_valid_citation",
  "cut_at_max_tokens"]);
// A not-found answer shows no model text and no evidence as an answer: the banner says why.
const NOT_SHOWN_DRAFT = new Set([...ABOUT_THE_DRAFT, "no_supported_sentence", "mostly_unsupported"]);
// An answer's flags as the API gives them structured (flag_details: {name, detail}, the names of
// gateway/answer/flags.py), each with its text from `flags` (the same flags, in the same order).
function flagsOf(r) {
  const texts = r.flags || [];
  return (r.flag_details || []).map((f, i) => ({name: f.name, detail: f.detail, text: String(texts[i] ?? f.name)}));
}
function flagNote(flag) {
  if (SILENT_FLAGS.has(flag.name)) return "";
  return `tech.flag.${flag.name}` in PAGE_STRINGS ? t(`tech.flag.${flag.name}`) : flag.text;
}

// The notes on one answer, each once: a crashed backend's note says it all, and an answer shown as
// evidence says nothing about sentences cut from a text that is not shown.
function answerNotes(r) {
  const flags = flagsOf(r);
  const crashed = flags.some((f) => f.name === "backend_crashed");
  const moot = r.outcome === "not_found" ? NOT_SHOWN_DRAFT : r.outcome === "evidence_only" ? ABOUT_THE_DRAFT : null;
  const shown = flags.filter((f) => !(crashed && f.name === "runtime_failed"))
    .filter((f) => !moot || !moot.has(f.name));
  return [...new Set(shown.map(flagNote).filter(Boolean))];
}

// Seconds a technician reads: "19.9 s", "0.03 s".
function seconds(ms) {
  const s = Number(ms) / 1000;
  return t("tech.seconds", {n: s >= 1 ? s.toFixed(1) : Math.max(s, 0.01).toFixed(2)});
}

// The line under the badge, in words; mode, milliseconds, index version and chain stay in its title (QA).
function answerMs(r) {  // the whole answer; an evidence-only answer ends with its evidence
  const tm = r.timings || {};
  return tm.total_ms || tm.evidence_ms || 0;
}
function statusLine(r) {
  const ms = answerMs(r);
  const key = r.outcome === "not_found" ? "not_found" : r.outcome === "cancelled" ? "stopped"
    : r.outcome === "answered" && r.mode !== "extractive" ? "answered" : "evidence";
  if (!ms) return t(`tech.status.${key}`);
  return t(`tech.status.${key}${key === "stopped" ? "_after" : "_in"}`, {time: seconds(ms)});
}
function statusDetails(r) {
  const tm = r.timings || {}, ms = answerMs(r);
  return [r.mode, ms ? `${Math.round(ms)} ms` : "",
    tm.retrieval_ms ? t("tech.details.retrieval", {ms: Math.round(tm.retrieval_ms)}) : "",
    r.index_version ? t("tech.details.index", {id: r.index_version}) : "",
    r.chain_id ? t("tech.details.chain", {id: r.chain_id}) : "", r.id ? t("tech.details.answer", {id: r.id}) : ""]
    .filter(Boolean).join(" · ");
}

// The badge's word for an outcome code (the class keeps the code).
function outcomeWord(outcome) {
  return `tech.outcome.${outcome}` in PAGE_STRINGS ? t(`tech.outcome.${outcome}`) : String(outcome).replace("_", " ");
}

// The evidence arrives before the model writes: quoted sentences and their passages, at once.
function showEvidence(ev) {
  $("outcome").textContent = outcomeWord("evidence"); $("outcome").className = "badge evidence";  // not final yet
  $("evidence-note").hidden = false; showAnswer(ev.text, ev.citations);
  const cards = $("cards"); cards.innerHTML = "";
  for (const c of ev.citations || []) cards.appendChild(card(c, `[${c.n}]`));
  $("meta").textContent = t("tech.meta.writing_from_evidence");
}

function showFinal(r) {
  currentAnswerId = r.id;
  if (r.id) {  // the answer's id joins the question in the URL
    const q = new URLSearchParams(location.search);
    putInUrl(q.get("q") || r.question || $("question").value.trim(), q.get("manual") || "", q.get("mode") || "", r.id, true);
  }
  $("outcome").textContent = outcomeWord(r.outcome);
  $("outcome").className = "badge " + r.outcome;
  $("answer").className = "";
  $("evidence-note").hidden = r.outcome !== "evidence_only";
  showAnswer(r.answer, r.outcome === "not_found" ? [] : r.citations);
  $("meta").textContent = statusLine(r); $("meta").title = statusDetails(r);
  // One note per answer: an answer shown as evidence says why in its evidence note, not in a second one.
  const notes = answerNotes(r);
  if (r.outcome === "evidence_only") $("evidence-why").textContent = [...notes, EVIDENCE_WHY].join(" ");
  else if (notes.length) $("flags").textContent = t("tech.note", {notes: notes.join(" ")});
  showDraft(r);
  const cards = $("cards"); cards.innerHTML = "";
  if (r.outcome === "not_found") {
    $("notfound").hidden = false; $("answer").hidden = true;  // the banner says it; no second copy
    // What the passages lack, in the page's language: the value kinds the quantity and coverage checks name
    // ("do not state a humidity"), and the manual searched; a value the model gave from none of them is
    // said so by the answer text.
    const missing = notFoundWhy(r);
    if (missing) $("notfound-why").textContent = missing;
    else if (flagsOf(r).some((f) => f.name === "values_not_in_passages")) $("notfound-why").textContent = r.answer;
    for (const p of r.passages || []) cards.appendChild(card(p, ""));
  } else {
    for (const c of r.citations || []) cards.appendChild(card(c, c.supporting ? t("tech.closest_passage") : `[${c.n}]`));
  }
  $("feedback").hidden = !r.id;
}

// "quantity_not_in_evidence: voltage, current" or "value_not_for_question: duration" as a sentence of the
// catalogue, naming the manual the passages come from (the first listed); null for other not-found answers.
function notFoundWhy(r) {
  const flag = flagsOf(r).find((f) => ["quantity_not_in_evidence", "value_not_for_question"].includes(f.name) && f.detail);
  if (!flag) return null;
  const [name, detail] = [flag.name, flag.detail.trim()];
  const kinds = detail.split(", ").map((k) => {
    const key = `tech.kind.${k.replace(/ /g, "_")}`;
    return key in PAGE_STRINGS ? t(key) : k;
  }).join(t("tech.kinds_or"));
  const first = (r.passages || [])[0] || {};
  const manual = first.title || first.manual || "";
  return t(name === "quantity_not_in_evidence" ? "tech.notfound_unstated" : "tech.notfound_apart", {manual, kinds});
}

// A model that has not passed gate 4 wrote a text (the technician chose Explain): the evidence leads,
// and the text is offered only folded below it and labelled as an unchecked draft (never green).
function showDraft(r) {
  const unqualified = flagsOf(r).some((f) => f.name === "unqualified_model");
  if (!unqualified || !String(r.draft || "").trim()) return;
  const known = new Set((r.citations || []).filter((c) => !c.supporting).map((c) => Number(c.n)));
  $("draft").innerHTML = renderAnswer(draftInCardNumbers(r), known);
  $("draft-box").hidden = false;
}

// The draft cites the passages as the model was given them (passages[].n); the cards are numbered 1..N
// as the answer cites them (citations[].passage_n is the passage a card quotes). So a draft's [k] is
// shown as the number of the card quoting passage k (a link to it), and a passage no card quotes gets
// a number after the cards' (plain: there is no card to open). A number beyond the passages given
// (invented) stays as written.
function draftInCardNumbers(r) {
  const card = new Map();
  for (const c of r.citations || []) if (!c.supporting) card.set(Number(c.passage_n || c.n), Number(c.n));
  const given = (r.passages || []).filter((p) => p.given).length;
  let next = Math.max(0, ...card.values());
  const other = new Map();
  const number = (k) => {
    if (card.has(k)) return card.get(k);
    if (given && (k < 1 || k > given)) return k;
    if (!other.has(k)) other.set(k, ++next);
    return other.get(k);
  };
  return String(r.draft || "").replace(/\[(\s*\d{1,4}(?:\s*(?:,|;|-|–|and)\s*\d{1,4})*\s*)\]/g,
    (m, inner) => "[" + inner.replace(/\d{1,4}/g, (d) => String(number(Number(d)))) + "]");
}

// What went wrong, in words a technician can act on (the browser's own "Failed to fetch" is not one).
function failureText(e) {
  if (e.status === 429) return t("tech.fail.busy_device");
  if (e.status === 503) return t("tech.fail.busy_gateway");
  if (e.status === 401 || e.status === 403) return t("tech.fail.key");
  if (e.status) return t("tech.fail.refused", {message: e.message});  // the API's message: English
  return t("tech.fail.unreachable");
}

function showFailure(e) {
  $("outcome").textContent = outcomeWord("not_answered"); $("outcome").className = "badge error";
  $("meta").textContent = ""; $("answer").hidden = true; $("evidence-note").hidden = true;
  $("failure-text").textContent = failureText(e); $("failure").hidden = false;
}

// Waiting for the model: say how many questions are ahead (the evidence is already on screen).
function showQueue(ahead) {
  $("meta").textContent = ahead > 1 ? t("tech.queue.many", {n: ahead})
    : ahead === 1 ? t("tech.queue.one") : t("tech.queue.next");
}

// The question, the manual and the mode live in the URL (?q=...&manual=...&mode=...), and the logged
// answer's id in its fragment (#a=<id>): Back, reload and a shared link restore the answer (shown from
// the answer log by id when this reader may read it, else asked again). A new question is a new history
// entry; asking the same one again replaces it.
function questionUrl(question, manual, mode, answerId) {
  const q = new URLSearchParams({q: question});
  if (manual) q.set("manual", manual);
  if (mode) q.set("mode", mode);
  return `${location.pathname}?${q}${answerId ? `#a=${encodeURIComponent(answerId)}` : ""}`;
}
let shownSearch = "";  // the ?q=... of the answer on screen
function putInUrl(question, manual, mode, answerId, replace) {
  const url = questionUrl(question, manual, mode, answerId);
  shownSearch = url.slice(location.pathname.length).split("#")[0];
  if (url === location.pathname + location.search + location.hash) return;
  const same = new URLSearchParams(location.search).get("q") === question;
  history[replace || same ? "replaceState" : "pushState"](null, "", url);
}

let asked = 0;  // questions asked on this page: a restore that finds a newer one gives way to it
async function ask(fromUrl) {
  asked++;
  const question = $("question").value.trim();
  if (!question) { $("question").focus(); return; }
  if (question.length > MAX_QUESTION_CHARS) { showTooLong(question); return; }
  const manual = $("manual").value;
  const mode = $("mode").value || null;
  remember(question); resetResult();
  putInUrl(question, manual, mode, null, fromUrl === true);
  // Stop takes Ask's place (the same cell of the form: nothing moves), and the keyboard focus with it.
  const focused = document.activeElement === $("ask");
  $("ask").disabled = true; $("ask").hidden = true; $("stop").hidden = false;
  if (focused) $("stop").focus({preventScroll: true});
  controller = new AbortController();
  try {
    const r = await postJson("/api/v1/ask", {question, manuals: manual ? [manual] : null, stream: true, mode},
      {"Accept": "text/event-stream", "X-Manualqa-Client": "web"}, controller.signal);
    if (!r.ok) {
      const err = new Error(r.statusText); err.status = r.status;
      try { err.message = (await r.json()).error.message; } catch {}
      throw err;
    }
    const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = "";
    $("meta").textContent = t("tech.meta.answering");
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0 || (cut = buf.indexOf("\r\n\r\n")) >= 0) {
        const block = buf.slice(0, cut); buf = buf.slice(cut + 2).replace(/^\r?\n/, "");
        let ev = "message"; const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith("event:")) ev = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (!data.length) continue;
        const payload = JSON.parse(data.join("\n"));
        if (ev === "token") {
          // The model's text is not shown while it is written: nothing unchecked reaches the screen (a
          // technician reads as it streams). The evidence stays; the line under the badge counts words.
          if (!drafting) {
            drafting = true; draftWords = 0;
            $("outcome").textContent = outcomeWord("checking"); $("outcome").className = "badge";
          }
          // a Chinese or Japanese draft has no spaces: each of its characters counts as a word
          draftWords += (payload.text.match(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]|[^\s\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+/gu) || []).length;
          $("meta").textContent = t("tech.meta.drafting", {n: draftWords});
        }
        else if (ev === "evidence") showEvidence(payload);
        else if (ev === "queue") showQueue(payload.ahead);
        else if (ev === "final") showFinal(payload);
        else if (ev === "error") { const err = new Error(payload.error.message); err.status = 500; throw err; }
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") showFailure(e);
    else {  // one clear state: stopped, nothing is still "answering"
      $("outcome").textContent = outcomeWord("stopped"); $("outcome").className = "badge cancelled";
      $("meta").textContent = t("tech.meta.stopped");
      // the evidence stays on screen; the model's unchecked draft was never shown
    }
  } finally {
    const focused = document.activeElement === $("stop");
    $("ask").disabled = false; $("ask").hidden = false; $("stop").hidden = true; controller = null;
    if (focused) $("ask").focus({preventScroll: true});
  }
}

// Feedback: one vote per answer that can be changed (the gateway keeps this client's latest vote and,
// when a request carries no comment, the comment given before); the comment has its own Send button,
// so a comment typed after the vote is sent with the current vote, never lost.
let currentVote = 0;
function showVote(thumbs) {
  currentVote = thumbs;
  $("up").setAttribute("aria-pressed", String(thumbs === 1));
  $("down").setAttribute("aria-pressed", String(thumbs === -1));
}
async function sendFeedback(body) {
  try {
    return (await postJson(`/api/v1/answers/${currentAnswerId}/feedback`, body)).ok;
  } catch { return false; }
}
async function feedback(thumbs) {
  if (!currentAnswerId) return;
  const ok = await sendFeedback({thumbs});
  if (ok) showVote(thumbs);
  $("fb-status").textContent = ok ? t(thumbs === 1 ? "tech.vote_saved_up" : "tech.vote_saved_down")
    : t("tech.feedback_failed");
}
async function sendComment() {
  if (!currentAnswerId) return;
  if (!currentVote) { $("fb-status").textContent = t("tech.vote_first"); return; }
  const ok = await sendFeedback({thumbs: currentVote, comment: $("comment").value});
  $("fb-status").textContent = ok ? t("tech.comment_saved") : t("tech.feedback_failed");
}

document.addEventListener("DOMContentLoaded", () => {
  $("key").value = localStorage.getItem("manualqa.key") || "";
  $("key").addEventListener("change", () => localStorage.setItem("manualqa.key", $("key").value.trim()));
  $("ask-form").addEventListener("submit", (e) => { e.preventDefault(); ask(); });
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); ask(); } });
  $("stop").addEventListener("click", () => controller && controller.abort());
  $("retry").addEventListener("click", () => ask());
  $("up").addEventListener("click", () => feedback(1));
  $("down").addEventListener("click", () => feedback(-1));
  $("send-comment").addEventListener("click", () => sendComment());
  $("comment").addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); sendComment(); } });
  $("question").addEventListener("input", () => { $("too-long").hidden = true; });
  renderRecent(); showDefaultMode();
  // the answer the URL names, unless the technician asked before the manuals' list came
  loadManuals().then(() => { if (!asked && location.search) restoreFromUrl(); });
  // Back / Forward between questions; a citation link (#cite-n) changes only the fragment: nothing to do
  window.addEventListener("popstate", () => { if (location.search !== shownSearch) restoreFromUrl(); });
});

// The answer the URL names: its logged copy when the fragment names one this reader may read and it
// is the same question, else the question asked again. A URL without ?q= is the blank form.
async function restoreFromUrl() {
  shownSearch = location.search;
  const q = new URLSearchParams(location.search);
  const question = (q.get("q") || "").trim();
  if (controller) controller.abort();
  if (!question) { $("question").value = ""; $("result").hidden = true; return; }
  $("question").value = question;
  const manual = q.get("manual") || "";
  if (manual && ![...$("manual").options].some((o) => o.value === manual)) {
    const o = document.createElement("option"); o.value = manual; o.textContent = manual; $("manual").appendChild(o);
  }
  $("manual").value = manual;
  $("mode").value = ["extractive", "generate"].includes(q.get("mode")) ? q.get("mode") : "";
  const id = (/(?:^#|&)a=([^&]+)/.exec(location.hash) || [])[1];
  const before = asked;
  if (id) {
    try {
      const r = await fetch(`/api/v1/answers/${encodeURIComponent(decodeURIComponent(id))}`, {headers: headers()});
      if (r.ok) {
        const row = await r.json();
        if (asked !== before) return;  // the technician asked meanwhile
        if (String(row.question || "").trim() === question) {
          resetResult(); showFinal(row);
          return;
        }
      }
    } catch { /* asked again below */ }
  }
  ask(true);
}

// "Gateway default" says which mode that is, and when the model is down (health: degraded).
async function showDefaultMode() {
  try {
    const h = await (await fetch("/api/v1/health")).json();
    const what = h.status === "degraded" ? t("tech.mode_is_degraded")
      : h.answer_mode === "extractive" ? t("tech.mode_extractive") : h.answer_mode === "generate" ? t("tech.mode_is_explain") : "";
    if (what) $("mode").querySelector('option[value=""]').textContent = t("tech.mode_default_is", {mode: what});
    // a model that has not passed gate 4 may still be tried, but says what its text will be
    if (h.model_unqualified) {
      const explain = $("mode").querySelector('option[value="generate"]');
      explain.textContent = t("tech.mode_generate_unqualified"); explain.title = h.model_unqualified;
    }
  } catch { /* the page works without it */ }
}
