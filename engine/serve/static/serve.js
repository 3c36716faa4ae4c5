// gpusizer serve: the YAML editor's line numbers and error markers, the form kept in step with the
// text, figures that open their derivation. No build step; HTMX (vendored) does the requests.
(function () {
  "use strict";
  var yaml, gutter, marker, files, form;

  function lines() { return yaml.value.split("\n").length; }

  function drawGutter(bad) {
    var n = lines(), out = [];
    for (var i = 1; i <= n; i++) {
      var msg = bad[i];
      out.push('<div class="ln' + (msg ? " bad" : "") + '"' + (msg ? ' title="' + esc(msg) + '"' : "") + ">" + i + "</div>");
    }
    gutter.innerHTML = out.join("");
    gutter.scrollTop = yaml.scrollTop;
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  var current = {};  // line -> message, for the workload's own diagnostics

  function markErrors() {
    var box = document.getElementById("diagnostics");
    current = {};
    var first = null;
    if (box) {
      var diags = [];
      try { diags = JSON.parse(box.getAttribute("data-diagnostics") || "[]"); } catch (e) { diags = []; }
      diags.forEach(function (d) {
        if (d.line && (d.file === "workload.yaml" || d.file === null)) {
          current[d.line] = (current[d.line] ? current[d.line] + "; " : "") + d.message;
          if (!first) first = d;
        }
      });
    }
    drawGutter(current);
    placeMarker(first);
  }

  function lineHeight() {
    var v = parseFloat(getComputedStyle(yaml).lineHeight);
    return isNaN(v) ? 18 : v;
  }

  function placeMarker(d) {
    if (!d) { marker.hidden = true; marker.removeAttribute("data-line"); return; }
    var top = (Math.max(d.line, 1) - 1) * lineHeight() - yaml.scrollTop + parseFloat(getComputedStyle(yaml).paddingTop || "0");
    marker.textContent = (d.line ? "line " + d.line + (d.column ? ", column " + d.column : "") + ": " : "") + d.message + (d.help ? " (" + d.help + ")" : "");
    marker.setAttribute("data-line", String(d.line));
    marker.style.top = Math.max(0, top + lineHeight()) + "px";
    marker.hidden = false;
  }

  function applyForm() {
    var box = document.getElementById("form-values");
    if (!box) return;
    var values = {};
    try { values = JSON.parse(box.getAttribute("data-values") || "{}"); } catch (e) { return; }
    document.querySelectorAll("#pickers [data-key]").forEach(function (el) {
      if (el === document.activeElement) return;
      var v = values[el.getAttribute("data-key")];
      if (v === undefined) return;
      if (el.tagName === "SELECT" && v !== "" && !Array.prototype.some.call(el.options, function (o) { return o.value === v; })) {
        var o = document.createElement("option"); o.value = v; o.textContent = v; el.appendChild(o);
      }
      el.value = v;
    });
  }

  function refresh() { htmx.trigger(form, "refresh"); }

  function edit(key, value) {
    var body = new URLSearchParams({ workload: yaml.value, files: files.value, key: key, value: value });
    return fetch("/ui/edit", { method: "POST", body: body, credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" } })
      .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, body: j }; }); })
      .then(function (res) {
        if (res.ok) {
          yaml.value = res.body.workload;
          drawGutter(current);
          refresh();
        } else {
          showProblem(res.body);
        }
      });
  }

  function showProblem(body) {
    var d = (body && body.diagnostics && body.diagnostics[0]) || { message: (body && body.message) || "the server could not answer" };
    placeMarker({ line: d.line || 0, column: d.column, message: (body && body.message) || d.message, help: d.help });
  }

  var timer = null;
  function onPicker(ev) {
    var el = ev.target;
    var key = el.getAttribute("data-key");
    if (!key) return;
    clearTimeout(timer);
    timer = setTimeout(function () { edit(key, el.value); }, el.tagName === "SELECT" ? 0 : 400);
  }

  function onConfig(ev) {
    var file = ev.target.files && ev.target.files[0];
    if (!file) return;
    file.text().then(function (text) {
      var attached = {};
      attached["config.json"] = text;
      files.value = JSON.stringify(attached);
      document.getElementById("attached").textContent = "Attached: config.json (" + file.name + ")";
      var name = document.querySelector('#pickers [data-key="model.name"]');
      var drop = name && name.value ? edit("model.name", "") : Promise.resolve();
      drop.then(function () { return edit("model.config", "config.json"); });
    });
  }

  function openDerivation(attr) {
    var panel = document.getElementById("derivation");
    panel.hidden = false;
    htmx.ajax("POST", "/ui/derivation", { target: "#derivation", swap: "innerHTML",
      values: { workload: yaml.value, files: files.value, attribute: attr } });
  }

  document.addEventListener("DOMContentLoaded", function () {
    yaml = document.getElementById("yaml");
    gutter = document.getElementById("gutter");
    marker = document.getElementById("marker");
    files = document.getElementById("files");
    form = document.getElementById("w");
    if (!yaml) return;
    yaml.addEventListener("input", function () { drawGutter(current); });
    yaml.addEventListener("scroll", function () { gutter.scrollTop = yaml.scrollTop; if (!marker.hidden) markErrors(); });
    yaml.addEventListener("keydown", function (ev) {
      if (ev.key === "Tab" && !ev.shiftKey) {  // two spaces, as YAML indents
        ev.preventDefault();
        var s = yaml.selectionStart;
        yaml.setRangeText("  ", s, yaml.selectionEnd, "end");
        yaml.dispatchEvent(new Event("input", { bubbles: true }));
      }
    });
    document.getElementById("pickers").addEventListener("input", onPicker);
    document.getElementById("pickers").addEventListener("change", function (ev) {
      if (ev.target.getAttribute("data-config")) onConfig(ev); else if (ev.target.tagName === "SELECT") onPicker(ev);
    });
    document.body.addEventListener("click", function (ev) {
      var fig = ev.target.closest("[data-attr]");
      if (fig) { ev.preventDefault(); openDerivation(fig.getAttribute("data-attr")); return; }
      if (ev.target.id === "derivation-close") { document.getElementById("derivation").hidden = true; }
    });
    document.body.addEventListener("htmx:afterSwap", function (ev) {
      if (ev.detail.target && ev.detail.target.id === "result") { markErrors(); applyForm(); }
    });
    document.body.addEventListener("htmx:responseError", function (ev) {
      var body = null;
      try { body = JSON.parse(ev.detail.xhr.responseText); } catch (e) { body = null; }
      showProblem(body);
    });
    markErrors();
  });
})();
