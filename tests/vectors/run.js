// Runs every case of the vector files against the page's JavaScript (web/assets/check.js, integrity.js, find.js)
// under node, and prints the answers as JSON: {"<rule>": [answer, ...]}, one per case in the file's order. An
// answer is a value, "reject" for the refusal the page shows (a SyntaxError from the JSON parser, a Failure of
// the integrity page, null from the paper id box), or {"error": message} for anything else: a bug, not an answer.
// tests/web/test_js_vectors.py compares them with the files' answers.
//
//   node tests/vectors/run.js VECTORS_DIR ASSETS_DIR
//
// The scripts run as a browser runs them, in one global scope; they need only window (the global itself),
// TextEncoder, atob and crypto.subtle (node >= 19 has them), and a document still loading, so that they
// only expose their functions and wait for a page that never comes.
"use strict";

const fs = require("fs");
const path = require("path");
const vm = require("vm");

const [vectors, assets] = process.argv.slice(2);
globalThis.window = globalThis;
globalThis.document = { readyState: "loading", addEventListener() {} };
for (const name of ["check.js", "integrity.js", "find.js"]) {
  vm.runInThisContext(fs.readFileSync(path.join(assets, name), "utf8"), { filename: name });
}
const C = window.LedgerCheck, I = window.LedgerIntegrity, F = window.LedgerFind;

function hex(data) { return Buffer.from(data).toString("hex"); }
function unhex(text) { return new Uint8Array(Buffer.from(text, "hex")); }
function base64(data) { return data === null ? null : Buffer.from(data).toString("base64"); }

const RULES = {
  async canonical(c) {
    const text = C.canonical(C.parse(c.text));
    return { canonical: text, sha256: await C.sha256(text) };
  },
  async signed_notes(c) {  // plain: the rule of the note; the page then also requires the paper index line
    const found = await I.checkpoint(c.note, c.vkey, true);
    return { index_root: base64(found.index), origin: found.origin, root: base64(found.root), size: found.size };
  },
  async cosignatures(c) {  // the note's body as integrity.js's checkpoint() cuts it
    const time = await I.cosignedBy(c.note, c.note.slice(0, c.note.indexOf("\n\n") + 1), c.key);
    return { timestamp: time === null ? null : time.toString() };
  },
  async rfc9162_inclusion(c) {  // as integrity.js's verify(): the indices' check, then the multi-leaf root
    const indices = c.leaves.map((leaf) => leaf[0]);
    if (indices.some((x, i) => (i && x <= indices[i - 1]) || x >= c.size)) throw new I.Failure("inclusion", "not ascending");
    const root = await I.multiRoot(indices, c.leaves.map((leaf) => unhex(leaf[1])), c.size, c.multi_path.map(unhex));
    if (hex(root) !== c.root) throw new I.Failure("inclusion", "another root");
    return { verified: true };
  },
  async paper_index(c) {  // as integrity.js's verify(): the path's root is the proof's and the signed one
    if (c.kind === "events_root") {
      return { root: hex(await I.treeHash(c.leaves.map(unhex), 0, c.leaves.length)) };
    }
    const proof = C.parse(JSON.stringify(c.proof));
    const index = await I.indexRoot(proof, c.proof.paper);
    if (hex(index.root) !== c.proof.index_root || hex(index.root) !== c.signed_root) throw new I.Failure("index", "another root");
    return { count: index.count, events_root: hex(index.eventsRoot) };
  },
  async arxiv_ids(c) {  // the box reads a paper id, not its version
    const paper = F.paperOf(c.text);
    if (paper === null) throw new I.Failure("find", "not an arXiv id");
    return { paper: paper };
  },
};

async function answer(rule, c) {
  try {
    return await RULES[rule](c);
  } catch (e) {
    if (e instanceof I.Failure || e instanceof SyntaxError) return "reject";
    return { error: String(e && e.stack || e) };
  }
}

(async () => {
  const out = {};
  for (const rule of Object.keys(RULES)) {
    const cases = JSON.parse(fs.readFileSync(path.join(vectors, rule + ".json"), "utf8"));
    out[rule] = [];
    for (const c of cases) out[rule].push(await answer(rule, c));
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})();
