/*
 * The board's paper-date window as a slider (issue 22 item 7).
 *
 * Without JavaScript the window is two date inputs in the filters' GET form. This file, loaded with `defer`
 * and no inline code, reveals the month sliders that leaderboard/_filters.html renders hidden
 * (<div data-window-sliders data-start="YYYY-MM">, one <input type=range data-window-thumb="from|to"> per
 * bound, value = months after data-start). Moving a thumb writes its month into the matching date input
 * (the first day for "from", the last for "to"; a thumb at its end clears the bound) and keeps the thumbs
 * in order; releasing it fires the range input's `change`, which bubbles to the form, so htmx submits it
 * exactly as if a date had been typed. Re-run on every htmx swap: the form is part of the swapped results.
 */
(function () {
  "use strict";

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  // [year, month 1-12] of the month `steps` after data-start.
  function monthAt(box, steps) {
    var parts = box.dataset.start.split("-");
    var index = parseInt(parts[0], 10) * 12 + parseInt(parts[1], 10) - 1 + steps;
    return [Math.floor(index / 12), (index % 12) + 1];
  }

  function lastDay(year, month) {
    return new Date(Date.UTC(year, month, 0)).getUTCDate();
  }

  function dateInput(box, end) {
    return box.closest("form").querySelector('input[name="paper_' + end + '"]');
  }

  function label(box, end) {
    var thumb = box.querySelector('[data-window-thumb="' + end + '"]');
    var ym = monthAt(box, parseInt(thumb.value, 10));
    var output = box.querySelector('[data-window-output="' + end + '"]');
    if (output) {
      output.textContent = ym[0] + "-" + pad(ym[1]);
    }
    return { thumb: thumb, ym: ym };
  }

  function sync(box, moved) {
    var from = box.querySelector('[data-window-thumb="from"]');
    var to = box.querySelector('[data-window-thumb="to"]');
    if (parseInt(from.value, 10) > parseInt(to.value, 10)) {
      if (moved === "from") {
        to.value = from.value;
      } else {
        from.value = to.value;
      }
    }
    ["from", "to"].forEach(function (end) {
      var state = label(box, end);
      var input = dateInput(box, end);
      if (!input) {
        return;
      }
      var atEnd =
        end === "from" ? state.thumb.value === state.thumb.min : state.thumb.value === state.thumb.max;
      if (atEnd) {
        input.value = "";
      } else {
        var day = end === "from" ? 1 : lastDay(state.ym[0], state.ym[1]);
        input.value = state.ym[0] + "-" + pad(state.ym[1]) + "-" + pad(day);
      }
    });
  }

  function reveal(root) {
    var boxes = (root || document).querySelectorAll("[data-window-sliders][hidden]");
    Array.prototype.forEach.call(boxes, function (box) {
      box.hidden = false;
      label(box, "from");
      label(box, "to");
    });
  }

  document.addEventListener("input", function (event) {
    var thumb = event.target.closest ? event.target.closest("[data-window-thumb]") : null;
    if (thumb) {
      sync(thumb.closest("[data-window-sliders]"), thumb.dataset.windowThumb);
    }
  });
  document.addEventListener("htmx:load", function (event) {
    reveal(event.target);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      reveal(document);
    });
  } else {
    reveal(document);
  }
})();
