// Copy buttons on the before/after commands of an error page. The buttons stay hidden unless
// this runs (without script they could do nothing). The Clipboard API needs a secure context
// (https, localhost or file://); elsewhere the text is selected and copied the old way.
(function () {
  "use strict";
  function copyText(text, done) {
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text, done); });
    } else {
      fallback(text, done);
    }
  }
  function fallback(text, done) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    done(ok);
  }
  Array.prototype.forEach.call(document.querySelectorAll(".pane"), function (pane) {
    var button = pane.querySelector("button.copy");
    var code = pane.querySelector("pre code");
    if (!button || !code) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      copyText(code.textContent, function (ok) {
        button.textContent = ok === false ? "Select and copy" : "Copied";
        button.setAttribute("data-copied", ok === false ? "no" : "yes");
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    });
  });
})();
