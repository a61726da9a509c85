// Re-checks a Paper Citation Record's digests in the reader's browser.
//
// It fetches the record's JSON (the URL in <main data-record-json>), re-encodes it canonically exactly as
// the ledger does (orjson with OPT_SORT_KEYS: compact, keys sorted by code point, only '"', '\' and control
// characters escaped), hashes with WebCrypto SHA-256, and marks each observation on the page "checked" or
// "failed". It never inserts markup: every string from the record is set as text.
//
// Numbers are kept as the digits the server sent (a JSON number may exceed what a JS number holds exactly;
// the published bytes are canonical, so writing the same digits back is exact).
"use strict";

(function () {
  // -- a JSON parser that keeps number lexemes and key order -------------------------------------------
  function Num(lexeme) { this.lexeme = lexeme; }
  function Obj(entries) { this.entries = entries; }  // [[key, value], ...] in document order

  var NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  var ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

  function parse(text) {
    var at = 0;
    function fail(what) { throw new SyntaxError(what + " at character " + at); }
    function space() { while (at < text.length && " \t\n\r".indexOf(text[at]) >= 0) at++; }
    function string() {
      var out = "";
      at++;  // the opening quote
      for (;;) {
        if (at >= text.length) fail("unterminated string");
        var c = text[at++];
        if (c === '"') return out;
        if (c === "\\") {
          var e = text[at++];
          if (e === "u") {
            var hex = text.slice(at, at + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape");
            out += String.fromCharCode(parseInt(hex, 16));  // surrogate pairs join as two code units
            at += 4;
          } else if (Object.prototype.hasOwnProperty.call(ESCAPES, e)) {
            out += ESCAPES[e];
          } else {
            fail("bad escape");
          }
        } else if (c < " ") {
          fail("control character in string");
        } else {
          out += c;
        }
      }
    }
    function value() {
      space();
      var c = text[at];
      if (c === "{") {
        at++;
        var entries = [], seen = new Set();
        space();
        if (text[at] === "}") { at++; return new Obj(entries); }
        for (;;) {
          space();
          if (text[at] !== '"') fail("expected a key");
          var key = string();
          if (seen.has(key)) fail("duplicate key");
          seen.add(key);
          space();
          if (text[at++] !== ":") fail("expected ':'");
          entries.push([key, value()]);
          space();
          var next = text[at++];
          if (next === "}") return new Obj(entries);
          if (next !== ",") fail("expected ',' or '}'");
        }
      }
      if (c === "[") {
        at++;
        var items = [];
        space();
        if (text[at] === "]") { at++; return items; }
        for (;;) {
          items.push(value());
          space();
          var after = text[at++];
          if (after === "]") return items;
          if (after !== ",") fail("expected ',' or ']'");
        }
      }
      if (c === '"') return string();
      if (text.startsWith("true", at)) { at += 4; return true; }
      if (text.startsWith("false", at)) { at += 5; return false; }
      if (text.startsWith("null", at)) { at += 4; return null; }
      NUMBER.lastIndex = at;
      var m = NUMBER.exec(text);
      if (!m) fail("unexpected character");
      at += m[0].length;
      return new Num(m[0]);
    }
    var result = value();
    space();
    if (at !== text.length) fail("trailing characters");
    return result;
  }

  // -- the canonical encoding ------------------------------------------------------------------------------
  // Keys sort by Unicode code point (orjson compares UTF-8 bytes, the same order). JavaScript's own sort
  // compares UTF-16 code units, which puts U+10000 and above before U+E000..U+FFFF: not the same order.
  function byCodePoint(a, b) {
    var i = 0, j = 0;
    while (i < a.length && j < b.length) {
      var x = a.codePointAt(i), y = b.codePointAt(j);
      if (x !== y) return x < y ? -1 : 1;
      i += x > 0xffff ? 2 : 1;
      j += y > 0xffff ? 2 : 1;
    }
    if (i < a.length) return 1;
    if (j < b.length) return -1;
    return 0;
  }

  var SHORT = { 0x22: '\\"', 0x5c: "\\\\", 0x08: "\\b", 0x09: "\\t", 0x0a: "\\n", 0x0c: "\\f", 0x0d: "\\r" };

  function quote(s) {
    var out = '"';
    for (var k = 0; k < s.length; k++) {
      var code = s.charCodeAt(k);
      if (SHORT[code] !== undefined) out += SHORT[code];
      else if (code < 0x20) out += "\\u00" + (code < 0x10 ? "0" : "") + code.toString(16);
      else out += s[k];
    }
    return out + '"';
  }

  function canonical(v) {
    if (v === null) return "null";
    if (v === true) return "true";
    if (v === false) return "false";
    if (v instanceof Num) return v.lexeme;
    if (typeof v === "string") return quote(v);
    if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
    if (v instanceof Obj) {
      var entries = v.entries.slice().sort(function (p, q) { return byCodePoint(p[0], q[0]); });
      return "{" + entries.map(function (e) { return quote(e[0]) + ":" + canonical(e[1]); }).join(",") + "}";
    }
    throw new TypeError("not a JSON value");
  }

  function get(obj, key) {
    for (var k = 0; k < obj.entries.length; k++) if (obj.entries[k][0] === key) return obj.entries[k][1];
    return undefined;
  }

  function without(obj, keys) {
    return new Obj(obj.entries.filter(function (e) { return keys.indexOf(e[0]) < 0; }));
  }

  function utf8(text) { return new TextEncoder().encode(text); }

  async function sha256(text) {
    var digest = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(text)));
    return "sha256:" + Array.from(digest, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }

  // -- the page ------------------------------------------------------------------------------------------
  function mark(element, ok, text) {
    if (!element) return;
    element.textContent = text;
    element.setAttribute("data-check", ok ? "checked" : "failed");
  }

  async function check(main, summary) {
    summary.textContent = "Fetching the record and re-computing its digests…";
    var response = await fetch(main.getAttribute("data-record-json"), { cache: "no-store", credentials: "omit" });
    if (!response.ok) throw new Error("the record's JSON could not be fetched (HTTP " + response.status + ")");
    var record = parse(await response.text());
    if (!(record instanceof Obj)) throw new Error("the record's JSON is not an object");
    var items = document.querySelectorAll("li.observation");
    var shown = new Map();
    items.forEach(function (li) { shown.set(li.getAttribute("data-direction") + " " + li.getAttribute("data-observation-id"), li); });
    var checked = 0, failed = 0;
    var done = new Set();
    for (var direction of ["inbound", "outbound"]) {
      var list = get(record, direction) || [];
      for (var obs of list) {
        var id = get(obs, "observation_id");
        var li = shown.get(direction + " " + id);
        var stated = get(obs, "observation_digest");
        var found = await sha256(canonical(without(obs, ["observation_digest"])));
        var ok = li !== undefined && found === stated && found === li.getAttribute("data-digest");
        if (ok) checked++; else failed++;
        if (li === undefined) continue;
        done.add(li);
        li.setAttribute("data-check", ok ? "checked" : "failed");
        mark(li.querySelector("span.check"), ok, ok ? "✓ checked: re-computed in this browser"
          : "✗ failed: re-computed " + found + (found === stated ? ", the page shows another digest" : ""));
      }
    }
    items.forEach(function (li) {  // on the page, but not in the JSON
      if (done.has(li)) return;
      failed++;
      li.setAttribute("data-check", "failed");
      mark(li.querySelector("span.check"), false, "✗ failed: not in the record's JSON");
    });
    var context = await sha256(canonical(without(record, ["context_digest", "as_of"])));
    var contextOk = context === get(record, "context_digest") && context === main.getAttribute("data-context-digest");
    mark(document.querySelector('span.check[data-check-for="context"]'), contextOk,
      contextOk ? "✓ checked: re-computed in this browser" : "✗ failed: re-computed " + context);
    summary.setAttribute("data-check", failed === 0 && contextOk ? "checked" : "failed");
    summary.textContent = checked + " of " + (checked + failed) + " observation digests re-computed in this browser match; "
      + "the context digest " + (contextOk ? "matches." : "does not match.");
  }

  function start() {
    var main = document.querySelector("main[data-record-json]");
    var button = document.getElementById("check-digests");
    var summary = document.getElementById("check-summary");
    if (!main || !button || !summary) return;
    if (!window.crypto || !crypto.subtle) {
      summary.textContent = "This browser offers no WebCrypto here (it needs HTTPS): check the digests with the snippet on the evidence page.";
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      button.disabled = true;
      check(main, summary).catch(function (error) {
        summary.setAttribute("data-check", "failed");
        summary.textContent = "The check could not run: " + error.message;
      }).finally(function () { button.disabled = false; });
    });
  }

  window.LedgerCheck = { parse: parse, canonical: canonical, sha256: sha256, utf8: utf8 };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
