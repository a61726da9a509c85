// The home page's box: finds a paper by any id form the command line accepts (`ledger.model.arxiv`:
// 2407.20018, arXiv:2407.20018, 2407.20018v2, hep-th/9901001v1), and an arxiv.org link, and goes to its
// record. It reads nothing from the server: a paper the site has no record of answers with the 404 page.
"use strict";

(function () {
  var NEW_STYLE = /^([0-9]{4})\.([0-9]{4,5})$/;
  var OLD_STYLE = /^[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?\/[0-9]{7}$/;
  var VERSION = /v([1-9][0-9]*)$/;
  var LINK = /^(?:https?:\/\/)?(?:www\.|export\.)?arxiv\.org\/(?:abs|pdf)\/(.+?)(?:\.pdf)?\/?$/i;

  // The paper id `text` names (no prefix, no version), or null: as `parse_arxiv_id` reads it.
  function paperOf(text) {
    var link = LINK.exec(text);
    var paper = link ? link[1] : text;
    if (paper.slice(0, 6).toLowerCase() === "arxiv:") paper = paper.slice(6);
    var version = VERSION.exec(paper);
    if (version) paper = paper.slice(0, version.index);
    var parts = NEW_STYLE.exec(paper);
    if (parts) return parts[2].length === (parts[1] >= "1501" ? 5 : 4) ? paper : null;
    return OLD_STYLE.test(paper) ? paper : null;
  }

  function start() {
    var form = document.getElementById("find");
    if (!form) return;
    var input = document.getElementById("find-id"), result = document.getElementById("find-result");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var text = input.value.trim();
      var paper = paperOf(text);
      if (paper === null) {
        result.textContent = "Not an arXiv id: \u201c" + text + "\u201d (expected e.g. 2407.20018 or hep-th/9901001).";
        input.setAttribute("aria-invalid", "true");
        return;
      }
      input.removeAttribute("aria-invalid");
      location.assign(form.getAttribute("data-paper-url") + paper + "/citation-record");
    });
  }

  window.LedgerFind = { paperOf: paperOf };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
