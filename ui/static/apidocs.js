// A small offline OpenAPI explorer: lists the operations of openapi.json, with a "try it" form.
"use strict";
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));

function example(schema, spec, depth = 0) {
  if (!schema || depth > 4) return null;
  if (schema.$ref) return example(spec.components.schemas[schema.$ref.split("/").pop()], spec, depth + 1);
  if (schema.oneOf || schema.anyOf) return example((schema.oneOf || schema.anyOf).find((s) => s.type !== "null"), spec, depth + 1);
  if (schema.type === "object" || schema.properties) {
    const out = {};
    for (const name of schema.required || Object.keys(schema.properties || {}).slice(0, 3))
      out[name] = example(schema.properties[name], spec, depth + 1);
    return out;
  }
  if (schema.type === "array") return [example(schema.items, spec, depth + 1)];
  if (schema.enum) return schema.enum[0];
  return {string: "How do I flash the firmware?", integer: 5, number: 1, boolean: false}[schema.type] ?? null;
}

async function main() {
  const spec = await (await fetch("/api/v1/schema/openapi.json")).json();
  const root = document.getElementById("ops");
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const det = document.createElement("details"); det.className = "card";
      const params = (op.parameters || []).filter((p) => p.in === "path" || p.in === "query");
      const bodySchema = op.requestBody?.content?.["application/json"]?.schema;
      det.innerHTML = `<summary><strong>${method.toUpperCase()}</strong> <code>${esc(path)}</code> — ${esc(op.summary || "")}</summary>
        ${params.map((p) => `<label>${esc(p.name)} (${esc(p.in)})<input type="text" data-param="${esc(p.name)}" data-in="${esc(p.in)}"></label>`).join("")}
        ${bodySchema ? `<label>JSON body<textarea data-body>${esc(JSON.stringify(example(bodySchema, spec), null, 2))}</textarea></label>` : ""}
        <p><button type="button">Send</button></p><pre data-out hidden></pre>`;
      det.querySelector("button").addEventListener("click", async () => {
        let url = path; const q = new URLSearchParams();
        det.querySelectorAll("[data-param]").forEach((i) => {
          if (i.dataset.in === "path") url = url.replace(`{${i.dataset.param}}`, encodeURIComponent(i.value));
          else if (i.value) q.set(i.dataset.param, i.value);
        });
        const headers = {}; const key = document.getElementById("key").value.trim();
        if (key) headers.Authorization = "Bearer " + key;
        const body = det.querySelector("[data-body]");
        if (body) headers["Content-Type"] = "application/json";
        const out = det.querySelector("[data-out]"); out.hidden = false; out.textContent = "…";
        const r = await fetch(url + (q.toString() ? "?" + q : ""), {method: method.toUpperCase(), headers, body: body ? body.value : undefined});
        out.textContent = `${r.status} ${r.statusText}\n\n` + (await r.text());
      });
      root.appendChild(det);
    }
  }
}
main();
