// The marking page (contributions/templates/contributions/marks.html): choose a snippet's lines by their numbers.
// A click on a line number starts a selection there, a shift-click extends it, a drag over line numbers selects
// the lines passed over; with the keyboard, the arrow keys
// move between line numbers, Shift with an arrow extends the selection, Enter or Space starts it anew. The
// selection fills the "New snippet" form's first and last line (which can also be typed). Every change itself is a
// form posted to the server (htmx), which keeps the marks as a draft: nothing here is stored. No inline script:
// the CSP forbids them.
(function () {
  "use strict";
  var anchor = null;

  function table() { return document.querySelector("table.mark-table"); }
  function field(id) { return document.getElementById(id); }

  function show(first, last) {
    var t = table();
    if (!t) return;
    var lo = Math.min(first, last), hi = Math.max(first, last);
    t.querySelectorAll("tr[data-line]").forEach(function (row) {
      var n = parseInt(row.getAttribute("data-line"), 10);
      row.classList.toggle("selected", n >= lo && n <= hi);
    });
    var f = field("mark-first"), l = field("mark-last");
    if (f && l) { f.value = lo; l.value = hi; }
    var live = field("mark-selection");
    if (live) live.textContent = lo === hi ? "Line " + lo + " selected." : "Lines " + lo + " to " + hi + " selected.";
  }

  function pick(line, extend) {
    if (extend && anchor !== null) {
      show(anchor, line);
    } else {
      anchor = line;
      show(line, line);
    }
  }

  function lineOf(button) { return parseInt(button.getAttribute("data-line"), 10); }

  function sibling(button, step) {
    var buttons = Array.prototype.slice.call(document.querySelectorAll("button.line-pick"));
    var i = buttons.indexOf(button) + step;
    return i >= 0 && i < buttons.length ? buttons[i] : null;
  }

  // Dragging over line numbers selects the lines passed over; a press and release on one line is a click.
  var dragging = false, dragged = false;
  document.addEventListener("mousedown", function (event) {
    var button = event.target.closest && event.target.closest("button.line-pick");
    if (!button || event.button !== 0 || event.shiftKey) return;
    dragging = true;
    dragged = false;
    pick(lineOf(button), false);
    event.preventDefault(); // no text selection while dragging
    button.focus();
  });
  document.addEventListener("mouseover", function (event) {
    if (!dragging) return;
    var row = event.target.closest && event.target.closest("table.mark-table tr[data-line]");
    if (!row) return;
    dragged = true;
    pick(parseInt(row.getAttribute("data-line"), 10), true);
  });
  document.addEventListener("mouseup", function () { dragging = false; });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.line-pick");
    if (!button) return;
    event.preventDefault();
    if (dragged) { dragged = false; return; } // the selection was made by the drag
    if (!event.shiftKey && anchor === lineOf(button)) return; // the press already picked it
    pick(lineOf(button), event.shiftKey);
  });

  document.addEventListener("keydown", function (event) {
    var button = event.target.closest && event.target.closest("button.line-pick");
    if (!button) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      var next = sibling(button, event.key === "ArrowDown" ? 1 : -1);
      event.preventDefault();
      if (!next) return;
      next.focus();
      if (event.shiftKey) {
        if (anchor === null) anchor = lineOf(button);
        pick(lineOf(next), true);
      }
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      pick(lineOf(button), event.shiftKey);
    }
  });

  // Typed line numbers show as the selection too.
  document.addEventListener("input", function (event) {
    if (event.target.id !== "mark-first" && event.target.id !== "mark-last") return;
    var f = parseInt(field("mark-first").value, 10), l = parseInt(field("mark-last").value, 10);
    if (f > 0 && l > 0) { anchor = f; show(f, l); }
  });

  // A page drawn anew (an htmx answer) starts with no selection.
  document.addEventListener("htmx:afterSettle", function () { anchor = null; });
})();
