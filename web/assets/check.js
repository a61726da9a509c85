// Checks a Paper Citation Record page in the reader's browser, on load and again on demand.
//
// It fetches the record's JSON (the URL in <main data-record-json>), re-encodes it canonically exactly as
// the ledger does (orjson with OPT_SORT_KEYS: compact, keys sorted by code point, only '"', '\' and control
// characters escaped), hashes with WebCrypto SHA-256, and compares what the page shows with it: every element
// marked data-field (in a card, a path in that observation) or data-record-field (a path in the record) must
// show exactly the JSON's value, every card must be an observation of the JSON and every observation a card,
// and every digest shown must be the one stated and the one re-computed. The summary (role="status") ends
// with data-check "pass", "fail" or "error". It never inserts markup: every string is set as text.
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
  // As web/views.py's `shown`: bidi and other invisible controls are displayed as their code point.
  var HIDDEN = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
  function shown(text) {
    return text.replace(HIDDEN, function (c) {
      return "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9";
    });
  }

  function at(value, path) {
    for (var key of path.split(".")) {
      if (!(value instanceof Obj)) return undefined;
      value = get(value, key);
    }
    return value;
  }

  function text(value) {  // a scalar as the page prints it; undefined for what a page cannot show as one
    if (typeof value === "string") return value;
    if (value instanceof Num) return value.lexeme;
    if (value === true || value === false) return String(value);
    return undefined;
  }

  function quoted(value) { return value === undefined ? "nothing" : "\u201c" + value + "\u201d"; }

  // Every element of `scope` marked with `attribute` against `json`; a problem per difference.
  function compare(scope, attribute, json, problems, inside) {
    var count = 0;
    scope.querySelectorAll("[" + attribute + "]").forEach(function (element) {
      if (inside && element.closest("li.observation") !== scope) return;
      count++;
      var path = element.getAttribute(attribute);
      var value = text(at(json, path));
      var expected = value === undefined ? undefined : (element.getAttribute("data-prefix") || "") + shown(value);
      if (element.textContent !== expected) {
        problems.push("the page shows " + quoted(element.textContent) + " for " + path + ", the JSON says " + quoted(value));
      }
    });
    return count;
  }

  function heading(li) {
    var h = li.querySelector("h3");
    return (h ? h.textContent : li.id) + " (" + li.id.replace("-", " ") + ")";
  }

  async function check(main, summary, failures) {
    summary.removeAttribute("data-check");
    failures.textContent = "";
    summary.textContent = "Fetching the record's JSON and checking this page against it\u2026";
    var response = await fetch(main.getAttribute("data-record-json"), { cache: "no-store", credentials: "omit" });
    if (!response.ok) throw new Error("the record's JSON could not be fetched (HTTP " + response.status + ")");
    var record = parse(await response.text());
    if (!(record instanceof Obj)) throw new Error("the record's JSON is not an object");
    var cards = document.querySelectorAll("li.observation");
    var shownCards = new Map();
    cards.forEach(function (li) {  // a card is its section's ("outbound-3") and the observation id it shows
      var shownId = li.querySelector('[data-field="observation_id"]');
      shownCards.set(li.id.split("-")[0] + " " + (shownId ? shownId.textContent : ""), li);
    });
    var failed = [], fields = 0, digests = 0;
    function fail(where, element, problems) {
      failed.push([where, element, problems]);
      if (element) element.setAttribute("data-check", "fail");
    }
    var done = new Set();
    for (var direction of ["inbound", "outbound"]) {
      var list = get(record, direction) || [];
      for (var obs of list) {
        var id = text(get(obs, "observation_id"));
        var li = shownCards.get(direction + " " + shown(id));
        var stated = text(get(obs, "observation_digest"));
        var found = await sha256(canonical(without(obs, ["observation_digest"])));
        digests++;
        if (li === undefined) {
          fail("Observation " + id + " (" + direction + ")", null, ["it is in the record's JSON but not on this page"]);
          continue;
        }
        done.add(li);
        var problems = [];
        fields += compare(li, "data-field", obs, problems, true);
        if (found !== stated) problems.push("the JSON states the digest " + stated + ", re-computed from the JSON: " + found);
        var mark = li.querySelector("span.check");
        if (problems.length) {
          fail(heading(li), li, problems);
          if (mark) { mark.textContent = "\u2717 failed: re-computed " + found; mark.setAttribute("data-check", "fail"); }
        } else {
          li.setAttribute("data-check", "pass");
          if (mark) { mark.textContent = "\u2713 checked: re-computed in this browser"; mark.setAttribute("data-check", "pass"); }
        }
      }
    }
    cards.forEach(function (li) {
      if (!done.has(li)) fail(heading(li), li, ["it is on this page but not in the record's JSON"]);
    });
    var recordProblems = [];
    fields += compare(main, "data-record-field", record, recordProblems, false);
    var context = await sha256(canonical(without(record, ["context_digest", "as_of"])));
    digests++;
    var stated = text(get(record, "context_digest"));
    if (context !== stated) recordProblems.push("the JSON states the context digest " + stated + ", re-computed: " + context);
    if (main.getAttribute("data-context-digest") !== stated) recordProblems.push("the page's data-context-digest is " + main.getAttribute("data-context-digest"));
    var contextMark = document.querySelector('span.check[data-check-for="context"]');
    if (recordProblems.length) {
      fail("The record's own fields and context digest", null, recordProblems);
      if (contextMark) { contextMark.textContent = "\u2717 failed: re-computed " + context; contextMark.setAttribute("data-check", "fail"); }
    } else if (contextMark) {
      contextMark.textContent = "\u2713 checked: re-computed in this browser";
      contextMark.setAttribute("data-check", "pass");
    }
    for (var [where, element, problems] of failed) {
      var item = document.createElement("li");
      if (element && element.id) {
        var link = document.createElement("a");
        link.href = "#" + element.id;
        link.textContent = where;
        item.appendChild(link);
      } else {
        item.appendChild(document.createTextNode(where));
      }
      item.appendChild(document.createTextNode(": " + problems.join("; ") + "."));
      failures.appendChild(item);
    }
    var scope = cards.length + " observation cards, " + fields + " values and " + digests + " digests";
    var limits = " Digests are not signatures: this shows the page and its JSON agree, not who published them; "
      + "the integrity page has the signed part.";
    if (failed.length) {
      summary.setAttribute("data-check", "fail");
      summary.textContent = "The check failed: " + failed.length + " part" + (failed.length > 1 ? "s" : "")
        + " of this page do not match the record's JSON (listed below); " + scope + " were compared." + limits;
    } else {
      summary.setAttribute("data-check", "pass");
      summary.textContent = "Checked in this browser: the " + scope + " shown on this page are the record's JSON, "
        + "and each digest re-computed from that JSON matches." + limits;
    }
  }

  function start() {
    var main = document.querySelector("main[data-record-json]");
    var button = document.getElementById("check-digests");
    var summary = document.getElementById("check-summary");
    var failures = document.getElementById("check-failures");
    if (!main || !button || !summary || !failures) return;
    function cannot(why) {
      summary.setAttribute("data-check", "error");
      summary.textContent = "The check cannot run: " + why;
    }
    if (location.protocol === "file:") {
      return cannot("this page was opened as a file, and a browser does not let a file fetch its JSON. Serve "
        + "the folder over HTTP (for example `python3 -m http.server` in it) or use the evidence page's commands.");
    }
    if (!window.crypto || !crypto.subtle) {
      return cannot("this browser offers no WebCrypto here (it needs HTTPS or localhost); check the digests with "
        + "the evidence page's commands.");
    }
    function run() {
      button.disabled = true;
      return check(main, summary, failures).catch(function (error) {
        cannot(error.message);
      }).finally(function () { button.disabled = false; button.hidden = false; });
    }
    button.addEventListener("click", run);
    run();
  }

  window.LedgerCheck = { parse: parse, canonical: canonical, sha256: sha256, utf8: utf8, shown: shown, without: without };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
