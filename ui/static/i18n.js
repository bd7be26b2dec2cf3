// manualqa pages in the technician's language: the strings come with the page (<script id="i18n">, from the
// server's catalogue for the language it chose: gateway/web/page_language.py), so every page script says
// t("key") and never holds a sentence of its own. Loaded before the page's own scripts.
"use strict";
const PAGE_LANG = document.documentElement.dataset.lang || "en";
const PAGE_STRINGS = (() => {
  try { return JSON.parse(document.getElementById("i18n").textContent); } catch { return {}; }
})();
const LANG_KEY = "manualqa.lang";  // localStorage: the switch's choice
const LANG_COOKIE = "manualqa_lang";  // the same choice, for the server to render the next page in it

// The string `key` with {name} filled from vars; a missing key shows itself (and the catalogue test fails).
function t(key, vars) {
  const s = PAGE_STRINGS[key];
  if (s === undefined) { console.warn("manualqa: no string", key); return key; }
  return vars ? s.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m)) : s;
}

// As t, for innerHTML: the string is escaped, the vars are markup the caller has escaped already.
function tHtml(key, vars) {
  const escape = (x) => x.replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  const s = PAGE_STRINGS[key] ?? key;
  return s.split(/(\{\w+\})/).map((part) => {
    const m = /^\{(\w+)\}$/.exec(part);
    return m && vars && m[1] in vars ? String(vars[m[1]]) : escape(part);
  }).join("");
}

// A language's name in the page's language ("Chinese", "Chinesisch", "中文"); a language the catalogue
// does not name (a French passage) is named by the browser, else shown as its code.
function languageName(code) {
  const key = `common.lang.${code}`;
  if (key in PAGE_STRINGS) return PAGE_STRINGS[key];
  try { return new Intl.DisplayNames([PAGE_LANG], {type: "language"}).of(code) || code; } catch { return code; }
}

function rememberLanguage(lang) {
  try { localStorage.setItem(LANG_KEY, lang); } catch { /* private mode: the cookie still holds it */ }
  document.cookie = `${LANG_COOKIE}=${lang}; path=/; max-age=31536000; SameSite=Lax`;
}

// The switch (<select id="lang">) reloads the page in the chosen language, without a ?lang= that would
// pin the old one. A page opened with ?lang= keeps that choice (the server set the cookie). A cookie
// lost (cleared, another port) is restored from localStorage, once per tab so a browser that refuses
// cookies is not reloaded in a loop.
// The languages the server offers: the switch's options (the script runs after them, at the end of <body>).
function offered() { return [...document.querySelectorAll("#lang option")].map((o) => o.value); }

(function languageSwitch() {
  const url = new URL(location.href);
  const cookie = new RegExp(`(?:^|;\\s*)${LANG_COOKIE}=(\\w+)`).exec(document.cookie);
  let stored = null;
  try { stored = localStorage.getItem(LANG_KEY); } catch { /* no storage */ }
  if (url.searchParams.has("lang") || cookie) {
    if (stored !== PAGE_LANG) rememberLanguage(PAGE_LANG);
  } else if (stored && stored !== PAGE_LANG && offered().includes(stored) && !sessionStorage.getItem("manualqa.lang-restored")) {
    sessionStorage.setItem("manualqa.lang-restored", "1");
    rememberLanguage(stored);
    location.reload();
  }
  const wire = () => {
    const select = document.getElementById("lang");
    if (!select) return;
    select.value = PAGE_LANG;
    select.addEventListener("change", () => {
      rememberLanguage(select.value);
      const next = new URL(location.href);
      next.searchParams.delete("lang");
      if (next.href === location.href) location.reload(); else location.assign(next.href);
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire); else wire();
})();

window.manualqaI18n = {t, tHtml, languageName, lang: PAGE_LANG};
