// Verifies, in the reader's browser, what an integrity page claims: the checkpoint's Ed25519 signature (C2SP
// signed note) against the verifier key the site publishes, the paper index proof against the index root that
// checkpoint signs, the inclusion of every event of the paper in the log at that size (one multi-leaf proof,
// RFC 9162 hashes), that the signed index counts exactly those events, and that the record's JSON re-computes
// to the context digest the evidence names. The verdict is the role="status" element's data-check: "pass",
// "fail" (naming the first step that failed) or "error". It uses check.js's JSON parser and canonical encoder
// (the entries are canonical JSON, as the ledger hashes them) and never inserts markup.
"use strict";

(function () {
  var C = window.LedgerCheck;
  var ZERO = new Uint8Array(32);

  function Failure(step, why) { this.step = step; this.message = why; }

  function bytes(text) { return new TextEncoder().encode(text); }
  function join() {
    var parts = Array.prototype.slice.call(arguments), size = 0, at = 0;
    parts.forEach(function (p) { size += p.length; });
    var out = new Uint8Array(size);
    parts.forEach(function (p) { out.set(p, at); at += p.length; });
    return out;
  }
  async function sha(data) { return new Uint8Array(await crypto.subtle.digest("SHA-256", data)); }
  function hex(data) { return Array.from(data, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join(""); }
  function same(a, b) { return a.length === b.length && a.every(function (x, i) { return x === b[i]; }); }
  function unhex(text, step, what) {
    if (typeof text !== "string" || !/^[0-9a-f]{64}$/.test(text)) throw new Failure(step, what + " is not a SHA-256 hash in hex");
    return Uint8Array.from(text.match(/../g), function (h) { return parseInt(h, 16); });
  }
  function unbase64(text, step, what) {
    try {
      return Uint8Array.from(atob(text), function (c) { return c.charCodeAt(0); });
    } catch (e) {
      throw new Failure(step, what + " is not base64");
    }
  }
  function get(obj, key) {
    if (!obj || !obj.entries) return undefined;
    for (var e of obj.entries) if (e[0] === key) return e[1];
    return undefined;
  }
  function scalar(value) { return value && value.lexeme !== undefined ? value.lexeme : value; }
  function count(value, step, what) {
    var text = scalar(value);
    if (typeof text !== "string" || !/^(0|[1-9][0-9]{0,15})$/.test(text)) throw new Failure(step, what + " is not a count");
    return Number(text);
  }

  // -- the signed note ---------------------------------------------------------------------------------
  // A signed-note key, <name>+<key id>+<base64 of the type byte and the Ed25519 key>: 1 a log's, 4 a witness's.
  async function noteKey(vkey, type, step, what) {
    var parts = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+\/=]+)$/.exec(vkey);  // base64 holds "+" too
    if (!parts) throw new Failure(step, what + " is not <name>+<key id>+<key>");
    var name = parts[1], id = Uint8Array.from(parts[2].match(/../g), function (h) { return parseInt(h, 16); });
    var key = unbase64(parts[3], step, what);
    if (key.length !== 33 || key[0] !== type)
      throw new Failure(step, what + " of " + name + " is not " + (type === 1 ? "an Ed25519 key" : "a cosignature/v1 key (type 0x04)"));
    if (!same((await sha(join(bytes(name + "\n"), key))).slice(0, 4), id)) throw new Failure(step, what + "'s id of " + name + " does not match its key");
    var publicKey = await crypto.subtle.importKey("raw", key.slice(1), { name: "Ed25519" }, false, ["verify"]);
    return { name: name, id: id, hex: parts[2], publicKey: publicKey };
  }

  // The bytes after the key id of each signature line of `key` (its name and key id) below the note's body.
  function signaturesBy(note, body, key, step, what) {
    var found = [];
    for (var line of note.slice(body.length + 1).split("\n")) {
      var m = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!m || m[1] !== key.name) continue;  // another key's line: not ours to judge
      var raw = unbase64(m[2], step, what);
      if (same(raw.slice(0, 4), key.id)) found.push(raw.slice(4));  // the same name, another key: not this one's
    }
    return found;
  }

  async function checkpoint(note, vkey, plain) {  // plain: the checkpoint witnesses cosign, no index line
    var step = "signature", key = await noteKey(vkey, 1, step, "the verifier key");
    var blank = note.indexOf("\n\n");
    if (blank < 0) throw new Failure(step, "the checkpoint is not a signed note");
    var body = note.slice(0, blank + 1);
    var signature = signaturesBy(note, body, key, step, "a signature").filter(function (s) { return s.length === 64; }).pop();
    if (signature === undefined) throw new Failure(step, "the checkpoint carries no signature by " + key.name + " (key id " + key.hex + ")");
    if (!(await crypto.subtle.verify({ name: "Ed25519" }, key.publicKey, signature, bytes(body)))) {
      throw new Failure(step, "the checkpoint's signature does not verify against " + key.name + " (key id " + key.hex + ")");
    }
    var lines = body.split("\n");
    if (!/^(0|[1-9][0-9]{0,15})$/.test(lines[1] || "")) throw new Failure(step, "the checkpoint's tree size is not a number");
    var root = unbase64(lines[2] || "", step, "the checkpoint's root"), index = null;
    for (var extension of lines.slice(3)) {
      if (extension.startsWith("paper-index/v1 ")) index = unbase64(extension.slice(15), step, "the paper index root");
    }
    if (root.length !== 32 || (!plain && (index === null || index.length !== 32)))
      throw new Failure(step, "the checkpoint has no root or no paper index root");
    return { origin: lines[0], size: Number(lines[1]), root: root, index: index, name: key.name, id: key.hex, body: body };
  }

  // -- witnesses (C2SP tlog-cosignature), asked for in the address: #witness=VKEY&witness=VKEY&quorum=N ------
  function asked() {
    var keys = [], quorum = null;
    for (var part of location.hash.replace(/^#/, "").split("&")) {
      var at = part.indexOf("="), name = part.slice(0, at), value = decodeURIComponent(part.slice(at + 1));  // "+" stays
      if (name === "witness") keys.push(value.trim());
      else if (name === "quorum") quorum = /^(0|[1-9][0-9]{0,3})$/.test(value) ? Number(value) : NaN;
    }
    return keys.length || quorum !== null ? { keys: keys, quorum: quorum === null ? keys.length : quorum } : null;
  }

  async function cosignedBy(note, body, vkey) {  // the cosignature's time, or null when the note has no line of this key
    var step = "witnesses", key = await noteKey(vkey, 4, step, "the witness key"), time = null;
    for (var sig of signaturesBy(note, body, key, step, "a cosignature")) {
      if (sig.length !== 72) throw new Failure(step, "the cosignature of " + key.name + " is not 76 bytes");
      var t = new DataView(sig.buffer, sig.byteOffset, 8).getBigUint64(0);
      var message = join(bytes("cosignature/v1\ntime " + t.toString() + "\n"), bytes(body));
      if (!(await crypto.subtle.verify({ name: "Ed25519" }, key.publicKey, sig.slice(8), message)))
        throw new Failure(step, "the cosignature of " + key.name + " does not verify");
      time = t;
    }
    return time;
  }

  // An auditing witness cosigns the paper index note itself, once it re-computed the index: the quorum met there
  // says the index was checked (docs/witnesses.md); else the witnesses are counted on the cosigned checkpoint.
  async function audited(bundle, signed, wanted) {
    var note = get(bundle, "checkpoint"), found = [];
    for (var key of wanted.keys) if (await cosignedBy(note, signed.body, key) !== null) found.push(key.split("+")[0]);
    return found.length && found.length >= wanted.quorum ? { names: found, asked: wanted.keys.length, quorum: wanted.quorum, audited: true } : null;
  }

  async function witnessed(bundle, signed, vkey, wanted) {
    var index = await audited(bundle, signed, wanted);
    if (index !== null) return index;
    var note = get(bundle, "cosigned");
    if (typeof note !== "string")
      throw new Failure("witnesses", "the evidence carries no cosigned checkpoint of its tree (the paper changed after the latest one the witnesses cosigned)");
    var of = await checkpoint(note, vkey, true);
    if (of.origin !== signed.origin || of.size !== signed.size || !same(of.root, signed.root))
      throw new Failure("witnesses", "the cosigned checkpoint is not of the evidence's tree");
    var found = [];
    for (var key of wanted.keys) if (await cosignedBy(note, of.body, key) !== null) found.push(key.split("+")[0]);
    if (found.length < wanted.quorum)
      throw new Failure("witnesses", "cosigned by " + (found.join(", ") || "no witness asked for") + " (" + found.length
        + " of the " + wanted.keys.length + " witnesses asked for), the quorum is " + wanted.quorum);
    return { names: found, asked: wanted.keys.length, quorum: wanted.quorum };
  }

  // -- RFC 9162 trees ------------------------------------------------------------------------------------
  function split(n) { var k = 1; while (k * 2 < n) k *= 2; return k; }
  function node(left, right) { return sha(join(Uint8Array.of(1), left, right)); }
  async function treeHash(leaves, lo, hi) {  // MTH over leaves[lo:hi]
    if (hi - lo === 1) return leaves[lo];
    var k = split(hi - lo);
    return node(await treeHash(leaves, lo, lo + k), await treeHash(leaves, lo + k, hi));
  }
  // As ledger.log.merkle.verify_multi_inclusion: every hash of the path used once, in order.
  async function multiRoot(indices, leaves, size, path) {
    var used = 0;
    function bisect(x, first, last) { while (first < last && indices[first] < x) first++; return first; }
    async function walk(lo, hi, first, last) {
      if (first === last) {
        if (used >= path.length) throw new Failure("inclusion", "the inclusion proof is shorter than the events need");
        return path[used++];
      }
      if (hi - lo === 1) return leaves[first];
      var k = split(hi - lo), middle = bisect(lo + k, first, last);
      return node(await walk(lo, lo + k, first, middle), await walk(lo + k, hi, middle, last));
    }
    var found = await walk(0, size, 0, indices.length);
    if (used !== path.length) throw new Failure("inclusion", "the inclusion proof is longer than the events need");
    return found;
  }

  // -- the paper index -------------------------------------------------------------------------------------
  function bit(key, depth) { return (key[depth >> 3] >> (7 - (depth & 7))) & 1; }
  async function indexRoot(proof, paper) {
    var step = "index", key = await sha(bytes(paper));
    if (hex(key) !== get(proof, "key")) throw new Failure(step, "the index proof's key is not SHA-256 of the paper id");
    var n = count(get(proof, "count"), step, "the index count"), eventsRoot = unhex(get(proof, "events_root"), step, "the events root");
    var counted = new Uint8Array(8);
    new DataView(counted.buffer).setBigUint64(0, BigInt(n));
    var digest = await sha(join(Uint8Array.of(2), key, counted, eventsRoot));
    var siblings = get(proof, "siblings") || [];
    for (var d = siblings.length - 1; d >= 0; d--) {
      var sibling = siblings[d] === null ? ZERO : unhex(siblings[d], step, "a sibling");
      digest = await sha(bit(key, d) ? join(Uint8Array.of(3), sibling, digest) : join(Uint8Array.of(3), digest, sibling));
    }
    return { root: digest, count: n, eventsRoot: eventsRoot };
  }

  async function verify(main) {
    var found = C.parse(await (await fetchOk(main.getAttribute("data-integrity-json"))).text());
    var bundle = get(found, "evidence"), paper = get(found, "paper");
    if (!bundle) throw new Failure("signature", "this ledger is published without a signing key: there is nothing signed to verify");
    var signed = await checkpoint(get(bundle, "checkpoint"), main.getAttribute("data-verifier-key"));
    var proof = get(bundle, "index");
    var index = await indexRoot(proof, paper);
    if (!same(index.root, unhex(get(proof, "index_root"), "index", "the index root")))
      throw new Failure("index", "the index proof's path does not lead to its index root");
    if (!same(index.root, signed.index)) throw new Failure("index", "the index root is not the one the checkpoint signs");
    if (count(get(proof, "tree_size"), "index", "the proof's tree size") !== signed.size)
      throw new Failure("index", "the index proof is for another tree size than the checkpoint's");
    var events = get(bundle, "events") || [], indices = [], leaves = [];
    for (var event of events) {
      var entry = get(event, "entry");
      indices.push(count(get(entry, "seq"), "inclusion", "an event's seq") - 1);
      leaves.push(await sha(join(Uint8Array.of(0), C.utf8(C.canonical(entry)))));
    }
    if (!indices.length || indices.some(function (x, i) { return (i && x <= indices[i - 1]) || x >= signed.size; }))
      throw new Failure("inclusion", "the events' seqs are not ascending within the tree");
    var path = (get(bundle, "inclusion") || []).map(function (h) { return unhex(h, "inclusion", "a proof hash"); });
    if (!same(await multiRoot(indices, leaves, signed.size, path), signed.root))
      throw new Failure("inclusion", "the paper's events and the inclusion proof do not lead to the checkpoint's root");
    if (index.count !== leaves.length || !same(await treeHash(leaves, 0, leaves.length), index.eventsRoot))
      throw new Failure("index", "the signed index counts " + index.count + " events of the paper, the evidence holds " + leaves.length);
    var record = C.parse(await (await fetchOk(main.getAttribute("data-record-json"))).text());
    var context = await C.sha256(C.canonical(C.without(record, ["context_digest", "as_of"])));
    if (context !== get(bundle, "context_digest") || context !== get(found, "context_digest"))
      throw new Failure("record", "the record's JSON re-computes to " + context + ", the evidence names " + get(bundle, "context_digest"));
    var wanted = asked(), witnesses = null;
    if (wanted !== null) {
      if (!(wanted.quorum <= wanted.keys.length)) throw new Failure("witnesses", "the address asks for a quorum that is not between 0 and the witness keys given");
      witnesses = await witnessed(bundle, signed, main.getAttribute("data-verifier-key"), wanted);
    }
    return { signed: signed, events: leaves.length, paper: paper, context: context, witnesses: witnesses };
  }

  async function fetchOk(url) {
    var response = await fetch(url, { cache: "no-store", credentials: "omit" });
    if (!response.ok) throw new Error(url + " could not be fetched (HTTP " + response.status + ")");
    return response;
  }

  function start() {
    var main = document.querySelector("main[data-integrity-json]");
    var verdict = document.getElementById("verdict");
    if (!main || !verdict) return;
    document.querySelectorAll("[data-absolute]").forEach(function (element) {  // commands that paste as they are
      element.textContent = new URL(element.getAttribute("data-absolute"), location.href).href;
    });
    function say(state, text) { verdict.setAttribute("data-check", state); verdict.textContent = text; }
    if (location.protocol === "file:" || !window.crypto || !crypto.subtle) {
      return say("error", "The verification cannot run: it needs this page served over HTTP(S) (not opened as a file) in a browser with WebCrypto.");
    }
    verify(main).then(function (v) {
      say("pass", "Verified in this browser at " + new Date().toISOString() + ": the checkpoint of the log "
        + v.signed.origin + " at tree size " + v.signed.size + " is signed by the key " + v.signed.name + " (key id "
        + v.signed.id + ") this site publishes; the paper index it signs counts " + v.events + " events of arXiv:"
        + v.paper + ", and all " + v.events + " are in the log at that size; the record's JSON re-computes to the "
        + "context digest the evidence names. "
        + (v.witnesses === null ? "Not proven here: that this key is the log's (compare it with one you trust), nor "
           + "that nobody was shown another log (add #witness=VKEY&quorum=N to this address to count witnesses)."
           : (v.witnesses.audited ? "Audited: the index was checked by " + v.witnesses.names.length + " auditing witness"
              + (v.witnesses.names.length === 1 ? "" : "es") + ", " + v.witnesses.names.join(", ") + ", who cosigned the paper index note after re-computing it"
              : "Witnessed: that tree's checkpoint is cosigned by " + (v.witnesses.names.join(", ") || "no witness"))
           + " (" + v.witnesses.names.length + " of the " + v.witnesses.asked + " witnesses asked for, quorum "
           + v.witnesses.quorum + "). Not proven here: that this key is the log's, nor that the witness keys are the "
           + "ones you trust."));
    }).catch(function (error) {
      if (error instanceof Failure) say("fail", "Verification failed (" + error.step + "): " + error.message + ".");
      else say("error", "The verification could not run: " + error.message);
    });
  }

  // For the shared known-answer vectors (tests/vectors/), run under node: the rules, as the page uses them.
  window.LedgerIntegrity = { Failure: Failure, checkpoint: checkpoint, cosignedBy: cosignedBy, multiRoot: multiRoot,
    treeHash: treeHash, indexRoot: indexRoot };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
