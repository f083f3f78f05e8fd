/*
 * Interactive views of the leaderboard pages (issue 12 item 6).
 *
 * The server draws every chart as SVG (the baseline, without JavaScript); a page may also offer an
 * interactive view of the same data: a <details data-vega-details hidden> holding a container
 * <div data-vega-spec="ID"> and the Vega-Lite spec as data (<script type="application/json" id="ID">,
 * written by Django's json_script; leaderboard/vega.py builds it). This file, loaded with `defer` and no
 * inline code anywhere, reveals those <details> and draws a view the first time it is opened.
 *
 * The vendored Vega scripts (static/vendor/vega/; their URLs are data attributes of this script's tag, so
 * hashed static names work) load only when a view is opened. Vega compiles its expressions with the
 * Function constructor unless told otherwise: `ast: true` makes vega-embed use the expression interpreter it
 * bundles (vega-interpreter), so no 'unsafe-eval' is needed, and `defaultStyle: false` plus the tooltip's
 * `disableDefaultStyle` keep it from injecting <style> elements (static/css/charts.css styles them).
 */
(function () {
  "use strict";

  var current = document.currentScript;
  var sources = current
    ? [current.dataset.vega, current.dataset.vegaLite, current.dataset.vegaEmbed]
    : [];
  var loading = null;
  // Containers holding a live view. A container restored by htmx's history (Back) is a new element
  // showing a dead copy of the chart, so it is drawn again.
  var drawn = new WeakSet();

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = src;
      script.async = false;
      script.onload = resolve;
      script.onerror = function () {
        reject(new Error("could not load " + src));
      };
      document.head.appendChild(script);
    });
  }

  function loadVega() {
    if (!loading) {
      if (window.vegaEmbed) {
        loading = Promise.resolve();
      } else if (sources.length !== 3 || sources.some(function (s) { return !s; })) {
        loading = Promise.reject(new Error("charts.js: the Vega script URLs are missing"));
      } else {
        // In order: vega-lite needs vega, vega-embed needs both.
        loading = sources.reduce(function (chain, src) {
          return chain.then(function () { return loadScript(src); });
        }, Promise.resolve());
      }
    }
    return loading;
  }

  function fail(container, error) {
    container.removeAttribute("aria-busy");
    var message = document.createElement("p");
    message.className = "muted";
    message.textContent = "The interactive view could not be drawn; the chart above shows the same data.";
    container.replaceChildren(message);
    console.error("charts.js:", error);
  }

  function draw(container) {
    if (drawn.has(container)) {
      return;
    }
    drawn.add(container);
    var data = document.getElementById(container.dataset.vegaSpec);
    if (!data) {
      fail(container, new Error("no spec #" + container.dataset.vegaSpec));
      return;
    }
    var spec;
    try {
      spec = JSON.parse(data.textContent);
    } catch (error) {
      fail(container, error);
      return;
    }
    loadVega()
      .then(function () {
        container.replaceChildren();
        return window.vegaEmbed(container, spec, {
          ast: true,
          actions: false,
          renderer: "svg",
          defaultStyle: false,
          tooltip: { disableDefaultStyle: true },
        });
      })
      .then(function () {
        container.removeAttribute("aria-busy");
      })
      .catch(function (error) {
        fail(container, error);
      });
  }

  // The elements matching `selector` in `root`, `root` itself included.
  function within(root, selector) {
    var found = Array.prototype.slice.call(root.querySelectorAll(selector));
    return root.matches && root.matches(selector) ? [root].concat(found) : found;
  }

  function reveal(root) {
    within(root, "details[data-vega-details]").forEach(function (details) {
      details.hidden = false;
      if (details.open) {
        details.querySelectorAll("[data-vega-spec]").forEach(draw);
      }
    });
  }

  // `toggle` does not bubble: listen in the capture phase, for <details> added later by htmx too.
  document.addEventListener(
    "toggle",
    function (event) {
      var details = event.target;
      if (details.matches && details.matches("details[data-vega-details]") && details.open) {
        details.querySelectorAll("[data-vega-spec]").forEach(draw);
      }
    },
    true
  );
  // htmx swaps in new content (filters, lazy heatmaps) and restores old content on Back.
  document.addEventListener("htmx:load", function (event) {
    reveal(event.target instanceof Element ? event.target : document);
  });
  document.addEventListener("htmx:historyRestore", function () {
    reveal(document);
  });
  reveal(document);
})();
