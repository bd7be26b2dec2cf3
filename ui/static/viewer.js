// manualqa page viewer: one page of a stored manual rendered by pdf.js, the cited sentences marked.
// Why: phone browsers ignore #page=N on a PDF (they show page 1, or download the file). pdf.js is
// vendored at build time (ui/vendor_pdfjs.py -> /static/vendor/pdfjs/), never from a CDN.
// URL: /viewer?manual=<sha256>&q=<sentence>&q=<sentence>#page=N   (?page=N works too); closest=1: nothing
// was cited, q is the opening of the passage closest to the question (a not-found answer's).
// Every string it shows comes from the page's catalogue through t() (ui/static/i18n.js, loaded before).
"use strict";

const {t} = window.manualqaI18n;

const PDFJS = "/static/vendor/pdfjs/";
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const manual = (params.get("manual") || "").toLowerCase();
const sentences = params.getAll("q").filter((s) => s.trim());
const closest = params.get("closest") === "1";
const fileUrl = `/api/v1/manuals/${manual}/file`;
const key = localStorage.getItem("manualqa.key");  // the technician page's reader key (app.js)
const MIN_RUN_CHARS = 12;  // a fallback run shorter than this (letters and digits) is not marked
const ZOOM_SHARP = 2;  // the canvas holds this many times the screen's pixels: a pinch to 2x stays sharp

// -- finding the cited text in the page's text layer ------------------------------------------
// Letters and digits only, NFKC-folded and lower-cased, one character at a time (so that every folded
// character knows where it came from): the text layer and the passage (extracted by pypdf at ingest)
// agree on those, not on spaces, line-break hyphens, quotes or ligatures.
function foldChar(c) {
  return c.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
}
function fold(s) {
  let out = "";
  for (const c of String(s || "")) out += foldChar(c);
  return out;
}

// The longest run of consecutive words of `sentence` found in `text` (folded): [start, length] or null.
// A run that is not found cannot grow into one that is, so each start extends until it fails.
function longestRun(text, sentence) {
  const words = String(sentence).split(/\s+/).map(fold).filter(Boolean);
  let best = null;
  for (let i = 0; i < words.length; i++) {
    let run = "", at = -1;
    for (let j = i; j < words.length; j++) {
      const next = text.indexOf(run + words[j]);
      if (next < 0) break;
      run += words[j]; at = next;
    }
    if (at >= 0 && run.length >= MIN_RUN_CHARS && (!best || run.length > best[1])) best = [at, run.length];
  }
  return best;
}

// Where the sentences are among the page's text items (pdf.js text layer spans): each sentence whole
// if the page has it, else its longest run of words. Returns {ranges: [[item, [start, end)], ...] in
// item order, the character range within that item's string; exact: every sentence was found whole}.
function findMarks(itemStrings, wanted) {
  let text = "";
  const owner = [];  // folded character -> [item, start, end] of the character it came from
  itemStrings.forEach((s, i) => {
    let at = 0;
    for (const c of s) {
      const f = foldChar(c);
      for (let k = 0; k < f.length; k++) owner.push([i, at, at + c.length]);
      text += f;
      at += c.length;
    }
  });
  const ranges = new Map();
  let exact = wanted.length > 0;
  for (const sentence of wanted) {
    const whole = fold(sentence);
    if (!whole) continue;
    let span = null;
    const at = text.indexOf(whole);
    if (at >= 0) span = [at, whole.length];
    else { exact = false; span = longestRun(text, sentence); }
    if (!span) continue;
    for (let k = span[0]; k < span[0] + span[1]; k++) {
      const [i, a, b] = owner[k], r = ranges.get(i);
      ranges.set(i, r ? [Math.min(r[0], a), Math.max(r[1], b)] : [a, b]);
    }
  }
  return {ranges: [...ranges].sort((x, y) => x[0] - y[0]), exact};
}

// -- page state ---------------------------------------------------------------------------------
const state = {pdfjs: null, doc: null, page: 1, citedPage: 1, count: 0, task: null, layer: null, seq: 0, width: 0};

function pageFromUrl() {
  const hash = /(?:^#|&)page=(\d+)/.exec(location.hash);
  const n = Number(hash ? hash[1] : params.get("page"));
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

function setState(name) { document.body.dataset.state = name; }
function say(text) { $("status").textContent = text; }

function showNumbers() {
  $("page-num").textContent = String(state.page);
  $("page-count").textContent = state.count ? t("viewer.page_count", {n: state.count}) : "";
  $("prev").disabled = !state.doc || state.page <= 1;
  $("next").disabled = !state.doc || state.page >= state.count;
  $("whole").href = `${fileUrl}#page=${state.page}`;
  document.body.dataset.page = String(state.page);
}

// Fit the page to the screen's width (a phone: ~378 px of 390), at most 1000 px on a desk.
function fitScale(page) {
  const natural = page.getViewport({scale: 1});
  const room = Math.min(document.documentElement.clientWidth - 12, 1000);
  return Math.max(0.25, room / natural.width);
}

// The page opens as wide as the screen (issue 48: a page wider than a phone needed sideways panning on
// every line), centred on the cited sentence; the technician pinches to zoom (the browser's own zoom:
// the viewport allows it), and the canvas is drawn at up to ZOOM_SHARP times the screen's density so
// that the zoomed text stays sharp.
async function render(n) {
  const seq = ++state.seq;  // a later tap on prev/next wins; an earlier render is cancelled
  state.task?.cancel();
  state.layer?.cancel();
  state.page = Math.min(Math.max(1, n), state.count || n);
  showNumbers();
  history.replaceState(null, "", `${location.pathname}${location.search}#page=${state.page}`);
  setState("loading"); say(t("viewer.loading_page", {page: state.page}));
  const page = await state.doc.getPage(state.page);
  if (seq !== state.seq) return;
  const text = await page.getTextContent();
  if (seq !== state.seq) return;
  const viewport = page.getViewport({scale: fitScale(page)});
  // Sharp on high-density screens, and when pinched, without a canvas bigger than phones allow (~16 M pixels).
  const ratio = Math.min((window.devicePixelRatio || 1) * ZOOM_SHARP, 6, Math.sqrt(16e6 / (viewport.width * viewport.height)));
  const box = $("page"), canvas = $("canvas"), layerDiv = $("text-layer");
  canvas.width = Math.floor(viewport.width * ratio);
  canvas.height = Math.floor(viewport.height * ratio);
  canvas.style.width = `${Math.floor(viewport.width)}px`;
  canvas.style.height = `${Math.floor(viewport.height)}px`;
  box.style.width = canvas.style.width;
  box.style.height = canvas.style.height;
  box.style.setProperty("--total-scale-factor", String(viewport.scale));
  layerDiv.replaceChildren();
  $("ocr-layer").replaceChildren();
  $("sheet").hidden = false;
  state.width = document.documentElement.clientWidth;
  state.task = page.render({canvasContext: canvas.getContext("2d"), viewport,
    transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : null});
  state.layer = new state.pdfjs.TextLayer({textContentSource: text, container: layerDiv, viewport});
  // A page read by OCR at ingest (a scan) has no text layer to mark: its words come with their boxes.
  const ocr = state.page === state.citedPage && sentences.length ? ocrPage(state.page) : Promise.resolve(null);
  try {
    await Promise.all([state.task.promise, state.layer.render()]);
  } catch (e) {
    if (e && e.name === "RenderingCancelledException" || seq !== state.seq) return;
    throw e;
  }
  const read = await ocr;
  if (seq !== state.seq) return;
  if (read) markOcr(read);
  else mark(state.layer);
  setState("rendered");
}

// The page's OCR words ({words: [{text, box: [x0, y0, x1, y1] as fractions of the page, confidence}]}),
// or null when the page has its own text layer (or the gateway predates OCR).
async function ocrPage(n) {
  try {
    const r = await fetch(`/api/v1/manuals/${manual}/pages/${n}`, {headers: key ? {Authorization: "Bearer " + key} : {}});
    if (!r.ok) return null;
    const page = await r.json();
    return page.source === "ocr" && Array.isArray(page.words) && page.words.length ? page : null;
  } catch {
    return null;
  }
}

// Mark the cited words on a page read by OCR: a box over each word the cited sentences cover (found as
// in the text layer: the sentence whole, else its longest run of words), placed by the word's OCR box.
function markOcr(page) {
  const marks = $("marks"), layer = $("ocr-layer");
  say("");
  const found = findMarks(page.words.map((w) => w.text), sentences);
  let first = null;
  for (const [i] of found.ranges) {
    const w = page.words[i], [x0, y0, x1, y1] = w.box, div = document.createElement("div");
    div.className = "highlight";
    div.dataset.word = w.text;
    div.dataset.confidence = String(w.confidence);
    Object.assign(div.style, {left: `${x0 * 100}%`, top: `${y0 * 100}%`, width: `${(x1 - x0) * 100}%`, height: `${(y1 - y0) * 100}%`});
    layer.appendChild(div);
    first ??= div;
  }
  const ocrSays = t("viewer.ocr_scan", {confidence: Math.round(page.ocr_confidence ?? 0)});
  if (first) {
    marks.textContent = t(closest ? "viewer.marked_closest_start"
      : found.exact ? "viewer.marked_exact" : "viewer.marked_closest_match") + ocrSays;
    first.scrollIntoView({block: "center", inline: "nearest"});
  } else {
    marks.textContent = t("viewer.ocr_not_found") + ocrSays;
  }
}

// Mark the cited sentences (only on the cited page: elsewhere a partial run would mislead). A span
// wholly cited is marked itself; one that holds more (a line running on past the sentence) gets the
// cited part wrapped, so the mark starts and ends where the sentence does.
function mark(layer) {
  const marks = $("marks");
  say("");
  if (state.page !== state.citedPage || !sentences.length) { marks.textContent = ""; return; }
  const found = findMarks(layer.textContentItemsStr, sentences);
  let first = null;
  for (const [i, [a, b]] of found.ranges) {
    const div = layer.textDivs[i], s = div.textContent;
    if (!/[\p{L}\p{N}]/u.test(s.slice(0, a) + s.slice(b))) {
      div.classList.add("highlight");
    } else {
      const part = document.createElement("span");
      part.className = "highlight part";
      part.textContent = s.slice(a, b);
      div.replaceChildren(s.slice(0, a), part, s.slice(b));
    }
    first ??= div;
  }
  if (first) {
    marks.textContent = t(closest
      ? (found.exact ? "viewer.marked_closest_start" : "viewer.marked_closest_part")
      : found.exact ? "viewer.marked_exact" : "viewer.marked_closest_match");
    // In the middle of the screen (the page is as wide as the screen: nothing to pan sideways).
    first.scrollIntoView({block: "center", inline: "nearest"});
  } else {
    marks.textContent = t(closest ? "viewer.not_found_closest" : "viewer.not_found_cited");
  }
}

// -- loading --------------------------------------------------------------------------------------
function failure(e) {
  setState("error");
  const status = e && e.status;
  if (status === 401 || status === 403) {
    say(t("viewer.fail_key"));
  } else if (status === 404) {
    say(t("viewer.fail_gone"));
  } else {
    say(t("viewer.fail_other", {reason: (e && e.message) || e}));
  }
}

// Without the vendored pdf.js (`make vendor` could not download it) open the PDF itself at the page,
// as the technician page did before the viewer: desktops honour #page=N, phones may show page 1.
async function fallback() {
  setState("fallback");
  say(t("viewer.fallback"));
  if (!key) { location.replace(`${fileUrl}#page=${state.page}`); return; }
  const r = await fetch(fileUrl, {headers: {Authorization: "Bearer " + key}});
  if (!r.ok) { failure({status: r.status, message: r.statusText}); return; }
  location.replace(URL.createObjectURL(await r.blob()) + `#page=${state.page}`);
}

async function title() {
  try {
    const r = await fetch("/api/v1/manuals", {headers: key ? {Authorization: "Bearer " + key} : {}});
    if (!r.ok) return;
    const m = (await r.json()).manuals.find((x) => x.sha256 === manual);
    if (m) { $("title").textContent = m.title || m.file_name; document.title = `${m.title || m.file_name} — manualqa`; }
  } catch { /* the title is a nicety */ }
}

async function start() {
  state.page = state.citedPage = pageFromUrl();
  showNumbers();
  if (!/^[0-9a-f]{64}$/.test(manual)) { setState("error"); say(t("viewer.no_manual")); return; }
  title();
  try {
    state.pdfjs = await import(PDFJS + "pdf.min.mjs");
  } catch (e) {
    await fallback();
    return;
  }
  state.pdfjs.GlobalWorkerOptions.workerSrc = PDFJS + "pdf.worker.min.mjs";
  say(t("viewer.opening"));
  try {
    state.doc = await state.pdfjs.getDocument({
      url: fileUrl,
      httpHeaders: key ? {Authorization: "Bearer " + key} : undefined,  // as app.js sends it
      // The file route answers Range requests: with streaming off pdf.js drops the whole-file request
      // after its headers and fetches only the 64 KiB ranges this page needs, and no more after them.
      disableStream: true,
      disableAutoFetch: true,
      rangeChunkSize: 65536,
      wasmUrl: PDFJS + "wasm/",  // JBIG2 / CCITT (scans) and JPEG 2000 decoders, same origin
      cMapUrl: PDFJS + "cmaps/",  // predefined CMaps of CJK fonts a PDF names without embedding
      cMapPacked: true,
      standardFontDataUrl: PDFJS + "standard_fonts/",  // Helvetica, Times... when not embedded
      enableXfa: false,
    }).promise;
    state.count = state.doc.numPages;
    if (state.citedPage > state.count) state.citedPage = state.count;
    await render(state.citedPage);
  } catch (e) {
    failure(e);
  }
}

// "Back to the answer": opened from an answer on the technician page (same tab), the way back is that
// page's history entry (its URL holds the question and the answer's id: the answer comes back as it was);
// the referrer (without its #a= fragment) is the link's target when there is no history to go back to.
function backLink() {
  let from = null;
  try { from = document.referrer ? new URL(document.referrer) : null; } catch { from = null; }
  if (!from || from.origin !== location.origin || from.pathname !== "/" || !from.searchParams.get("q")) return;
  const back = $("back");
  back.href = from.pathname + from.search;
  back.hidden = false;
  back.addEventListener("click", (e) => {
    if (history.length > 1) { e.preventDefault(); history.back(); }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  backLink();
  $("prev").addEventListener("click", () => render(state.page - 1).catch(failure));
  $("next").addEventListener("click", () => render(state.page + 1).catch(failure));
  let resizeTimer = null;  // a phone turned sideways: fit the new width
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (state.doc && document.documentElement.clientWidth !== state.width) render(state.page).catch(failure);
    }, 250);
  });
  start();
});

// For the browser tests (tests/test_viewer.py) and for a curious technician's console.
window.manualqaViewer = {fold, findMarks, longestRun, markOcr, state};
