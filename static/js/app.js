// contextstore dashboard behaviour. A static file because the CSP forbids inline scripts.
(function () {
  "use strict";

  // Polling (auto-refresh, live tail) only while the tab is visible and not paused.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    if (elt.hasAttribute("data-poll") && (document.hidden || elt.closest("[data-paused]"))) {
      evt.preventDefault();
    }
  });

  // An error answer that was not written for the flash area (a 404 page, a 500) must not
  // land inside a list: show a short message instead. Text only, never the response's HTML.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var xhr = evt.detail.xhr;
    // A session that expired answers a fragment request with the login page: go there whole.
    if (xhr.responseURL && xhr.responseURL.indexOf("/accounts/login/") !== -1) {
      evt.detail.shouldSwap = false;
      window.location.href = xhr.responseURL;
      return;
    }
    if (xhr.status < 400 || xhr.getResponseHeader("HX-Retarget")) return;
    evt.detail.shouldSwap = false;
    var flash = document.getElementById("flash");
    if (!flash) return;
    var box = document.createElement("div");
    box.className = "flash";
    box.setAttribute("role", "alert");
    box.textContent = xhr.status === 404 ? "That is gone or not yours to see (404)."
      : xhr.status === 403 ? "Your role does not allow this (403)."
      : xhr.status === 503 ? "The database is unavailable for a moment (503). Try again shortly."
      : "Something went wrong (" + xhr.status + "). Try again.";
    flash.replaceChildren(box);
    dismissable(box);
  });
  document.addEventListener("htmx:sendError", function () {
    var flash = document.getElementById("flash");
    if (!flash) return;
    var box = document.createElement("div");
    box.className = "flash";
    box.textContent = "The server cannot be reached; retrying when it is back.";
    flash.replaceChildren(box);
    dismissable(box);
  });

  // The confirmation bar (fixed to the window's bottom) closes with its ×; the dock moves up
  // above it while it shows, so neither hides the other.
  function dismissable(box) {
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "linkish";
    btn.setAttribute("data-dismiss", "");
    btn.setAttribute("aria-label", "Dismiss this message");
    btn.textContent = "×";
    box.appendChild(btn);
    feedbackHeight();
  }
  function feedbackHeight() {
    var h = 0;
    document.querySelectorAll("#flash:not(:empty), .undo-bar").forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (r.height) h = Math.max(h, window.innerHeight - r.top);
    });
    document.documentElement.style.setProperty("--feedback-h", h + "px");
  }
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-dismiss]");
    if (!btn) return;
    var bar = btn.closest(".undo-bar, .flash");
    if (bar) bar.remove();
    feedbackHeight();
  });
  document.addEventListener("DOMContentLoaded", feedbackHeight);
  document.addEventListener("htmx:afterSwap", function () {
    // A newer offer (a block action swaps the side panel with its own) replaces the older one.
    var bars = document.querySelectorAll(".undo-bar");
    for (var i = 0; i < bars.length - 1; i++) bars[i].remove();
  });
  document.addEventListener("htmx:afterSettle", feedbackHeight);
  window.addEventListener("resize", feedbackHeight);

  // "Load more" on the sessions list stops the auto-refresh from dropping loaded rows.
  document.addEventListener("click", function (evt) {
    var more = evt.target.closest("[data-pause-refresh]");
    if (more) {
      var results = document.getElementById("results");
      if (results) results.setAttribute("data-paused", "");
    }
  });

  // Popovers (confirmations, the selection's forms, a call card's "Add to dataset" and
  // "Share") close with Escape, giving focus back to their toggle, and on a click outside them.
  var POPOVERS = "details.confirm[open], #selection details[open], details.to-dataset[open], " +
    "details.share-call[open]";
  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "Escape") return;
    document.querySelectorAll(POPOVERS).forEach(function (d) {
      var hadFocus = d.contains(document.activeElement);
      d.open = false;
      if (hadFocus) d.querySelector("summary").focus();
    });
  });
  document.addEventListener("click", function (evt) {
    document.querySelectorAll(POPOVERS).forEach(function (d) {
      if (!d.contains(evt.target)) d.open = false;
    });
  });

  // The side panel shows one section at a time under sticky tabs; the choice survives the
  // panel being swapped by an action (block save, restore) and a reload of the page.
  var sideTab = null;
  try { sideTab = window.sessionStorage.getItem("contextstore.sideTab"); } catch (e) { /* private mode */ }
  function paintSideTabs() {
    var panel = document.getElementById("context-panel");
    if (!panel) return;
    var nav = panel.querySelector(".side-tabs");
    if (!nav) return;
    var tabs = nav.querySelectorAll("[data-side-tab]");
    var known = Array.prototype.some.call(tabs, function (t) { return t.getAttribute("data-side-tab") === sideTab; });
    if (!known) sideTab = tabs[0].getAttribute("data-side-tab");
    nav.hidden = false;
    panel.classList.add("tabbed");
    tabs.forEach(function (t) {
      t.setAttribute("aria-pressed", t.getAttribute("data-side-tab") === sideTab ? "true" : "false");
    });
    panel.querySelectorAll("[data-tab]").forEach(function (p) {
      p.hidden = p.getAttribute("data-tab") !== sideTab;
    });
  }
  document.addEventListener("click", function (evt) {
    var tab = evt.target.closest("[data-side-tab]");
    if (!tab) return;
    sideTab = tab.getAttribute("data-side-tab");
    try { window.sessionStorage.setItem("contextstore.sideTab", sideTab); } catch (e) { /* private mode */ }
    paintSideTabs();
  });
  document.addEventListener("DOMContentLoaded", paintSideTabs);
  document.addEventListener("htmx:afterSettle", paintSideTabs);

  // Workspace switcher: choosing a workspace navigates.
  document.addEventListener("change", function (evt) {
    if (evt.target.matches("[data-autosubmit]")) evt.target.form.submit();
  });

  // Long content folds; "show more" unfolds it (the rendered and the raw view alike).
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-more]");
    if (!btn) return;
    var reader = btn.closest(".reader");
    var contents = reader ? reader.querySelectorAll(".content") : [btn.previousElementSibling];
    var folded = false;
    contents.forEach(function (c) { folded = c.classList.toggle("clamp"); });
    btn.textContent = folded ? "show more" : "show less";
  });

  // Markdown is shown rendered; "raw" shows the text as the agent wrote it.
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-raw-toggle]");
    if (!btn) return;
    var reader = btn.closest(".reader");
    // The rendered view: Markdown, or a JSON tree.
    var md = reader.querySelector(".content:not(.raw)"), raw = reader.querySelector(".content.raw");
    var showRaw = raw.hidden;
    raw.hidden = !showRaw;
    md.hidden = showRaw;
    if (md.classList.contains("clamp") !== raw.classList.contains("clamp")) raw.classList.toggle("clamp");
    btn.setAttribute("aria-pressed", showRaw ? "true" : "false");
    btn.textContent = showRaw ? "rendered" : "raw";
  });

  // Copy: a code block's text, a JSON value, or a JSON key's path ($.a[0].b).
  function copied(btn, text) {
    var done = function () {
      var label = btn.getAttribute("data-label") || btn.textContent;
      btn.setAttribute("data-label", label);
      btn.classList.add("copied");
      var worded = btn.hasAttribute("data-copy-code") || btn.hasAttribute("data-copy-url") ||
        btn.hasAttribute("data-copy-text");
      if (worded) btn.textContent = "Copied";
      window.setTimeout(function () {
        btn.classList.remove("copied");
        if (worded) btn.textContent = label;
      }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, done);
    } else {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "offscreen";
      document.body.appendChild(area);
      area.select();
      try { document.execCommand("copy"); } catch (e) { /* nothing to do */ }
      area.remove();
      done();
    }
    document.documentElement.setAttribute("data-copied", text);
  }
  // Copy a call's request (as OpenAI or Anthropic JSON, or curl): the link's URL answers it
  // as plain text, built on the server; without JavaScript the link opens it.
  document.addEventListener("click", function (evt) {
    var link = evt.target.closest("[data-copy-url]");
    if (!link) return;
    evt.preventDefault();
    fetch(link.href, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error(response.status);
      return response.text();
    }).then(function (text) { copied(link, text); }, function () {
      window.location.href = link.href;
    });
  });
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-copy-code], [data-copy-value], [data-copy-path], [data-copy-text]");
    if (!btn) return;
    var text;
    if (btn.hasAttribute("data-copy-text")) {  // a share link: the text the button names
      text = btn.getAttribute("data-copy-text");
    } else if (btn.hasAttribute("data-copy-code")) {
      text = btn.parentElement.querySelector("pre").textContent;
    } else if (btn.hasAttribute("data-copy-path")) {
      text = btn.getAttribute("data-copy-path");
    } else {
      text = btn.textContent;
      // a string value copies as the string itself, not its JSON quoting
      if (btn.classList.contains("j-str")) { try { text = JSON.parse(text); } catch (e) { /* cut */ } }
    }
    copied(btn, text);
  });

  // A big JSON document's closed nodes come as their JSON (templatetags: _tree, lazy) and are
  // built here when opened, as the server builds the rest: keys copy their path, values
  // themselves, NUL and bidirectional controls shown as markers, never as the raw character.
  var MARKED = {"\u0000": ["NUL character", "\u2400"], "\u061c": ["ARABIC LETTER MARK", "ALM"],
    "\u200e": ["LEFT-TO-RIGHT MARK", "LRM"], "\u200f": ["RIGHT-TO-LEFT MARK", "RLM"],
    "\u202a": ["LEFT-TO-RIGHT EMBEDDING", "LRE"], "\u202b": ["RIGHT-TO-LEFT EMBEDDING", "RLE"],
    "\u202c": ["POP DIRECTIONAL FORMATTING", "PDF"], "\u202d": ["LEFT-TO-RIGHT OVERRIDE", "LRO"],
    "\u202e": ["RIGHT-TO-LEFT OVERRIDE", "RLO"], "\u2066": ["LEFT-TO-RIGHT ISOLATE", "LRI"],
    "\u2067": ["RIGHT-TO-LEFT ISOLATE", "RLI"], "\u2068": ["FIRST STRONG ISOLATE", "FSI"],
    "\u2069": ["POP DIRECTIONAL ISOLATE", "PDI"]};
  var MARKED_RE = /[\u0000\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  var TREE_ITEMS = 200, TREE_DEPTH = 12;
  function escapeMarked(text) {
    return text.replace(MARKED_RE, function (c) { return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4); });
  }
  function appendMarked(el, text, asEscape) {
    var at = 0;
    text.replace(MARKED_RE, function (c, offset) {
      el.appendChild(document.createTextNode(text.slice(at, offset)));
      var code = c.charCodeAt(0).toString(16).toUpperCase();
      var span = document.createElement("span");
      span.className = "nul";
      span.title = MARKED[c][0] + " (U+" + ("000" + code).slice(-4) + ")";
      span.textContent = asEscape ? "\\u" + ("000" + code.toLowerCase()).slice(-4) : MARKED[c][1];
      el.appendChild(span);
      at = offset + c.length;
      return c;
    });
    el.appendChild(document.createTextNode(text.slice(at)));
  }
  function jPath(parent, key) {
    if (typeof key === "number") return parent + "[" + key + "]";
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return parent + "." + key;
    return parent + "[" + escapeMarked(JSON.stringify(key)) + "]";
  }
  function jScalar(value) {
    var kind = value === null ? "null" : typeof value === "boolean" ? "bool" : typeof value === "number" ? "num" : "str";
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "j-" + kind + " j-val";
    btn.setAttribute("data-copy-value", "");
    btn.title = "Copy value";
    if (kind === "str") {  // JSON's quoting, with a marked character as its escape
      btn.appendChild(document.createTextNode("\""));
      value.split(MARKED_RE).forEach(function (piece, i, all) {
        btn.appendChild(document.createTextNode(JSON.stringify(piece).slice(1, -1)));
        if (i < all.length - 1) {
          var c = value.match(MARKED_RE)[i];
          appendMarked(btn, c, true);
        }
      });
      btn.appendChild(document.createTextNode("\""));
    } else {
      btn.textContent = JSON.stringify(value);
    }
    return btn;
  }
  function jChildren(ul, value, depth, path) {
    var pairs = Array.isArray(value) ? value.map(function (v, i) { return [i, v]; })
      : Object.keys(value).map(function (k) { return [k, value[k]]; });
    pairs.slice(0, TREE_ITEMS).forEach(function (pair) {
      var li = document.createElement("li"), key = document.createElement("button"), p = jPath(path, pair[0]);
      key.type = "button";
      key.className = "j-key";
      key.setAttribute("data-copy-path", p);
      key.title = "Copy path " + p;
      appendMarked(key, String(pair[0]), false);
      li.appendChild(key);
      li.appendChild(document.createTextNode(": "));
      li.appendChild(jNode(pair[1], depth + 1, p));
      ul.appendChild(li);
    });
    if (pairs.length > TREE_ITEMS) {
      var more = document.createElement("li");
      more.className = "muted";
      more.textContent = "… " + (pairs.length - TREE_ITEMS) + " more";
      ul.appendChild(more);
    }
  }
  function jNode(value, depth, path) {
    if (value === null || typeof value !== "object") return jScalar(value);
    var n = Array.isArray(value) ? value.length : Object.keys(value).length;
    if (!n) {
      var empty = document.createElement("span");
      empty.className = "j-empty";
      empty.textContent = Array.isArray(value) ? "[]" : "{}";
      return empty;
    }
    if (depth >= TREE_DEPTH) {
      var deep = document.createElement("code");
      deep.className = "j-deep";
      deep.textContent = JSON.stringify(value);
      return deep;
    }
    var details = document.createElement("details"), summary = document.createElement("summary");
    details.className = "j-node";
    details.setAttribute("data-lazy-json", "");
    details.setAttribute("data-depth", String(depth));
    details.setAttribute("data-path", path);
    details.lazyValue = value;
    summary.textContent = Array.isArray(value) ? "[" + n + " items]" : "{" + n + " keys}";
    details.appendChild(summary);
    details.appendChild(document.createElement("ul"));
    return details;
  }
  document.addEventListener("toggle", function (evt) {
    var node = evt.target;
    if (!node.open || !node.hasAttribute || !node.hasAttribute("data-lazy-json")) return;
    var value = node.lazyValue !== undefined ? node.lazyValue : JSON.parse(node.getAttribute("data-lazy-json"));
    node.removeAttribute("data-lazy-json");
    node.lazyValue = undefined;
    jChildren(node.querySelector("ul"), value, Number(node.getAttribute("data-depth")), node.getAttribute("data-path"));
  }, true);

  // Range selection: click an event's number for the first, shift-click for the last. On a
  // touch or narrow screen (no shift key) two taps do it: the first sets the start, the second
  // the end.
  var selection = { start: null, end: null };
  var picking = false;  // a start was tapped; the next tap ends the range
  function tapMode() { return window.matchMedia("(pointer: coarse), (max-width: 640px)").matches; }
  function paintSelection() {
    var bar = document.getElementById("selection");
    document.querySelectorAll(".event.selected").forEach(function (e) { e.classList.remove("selected"); });
    if (selection.start === null) {
      if (bar) bar.hidden = true;
      return;
    }
    var lo = Math.min(selection.start, selection.end), hi = Math.max(selection.start, selection.end);
    document.querySelectorAll(".event[data-position]").forEach(function (e) {
      var position = Number(e.getAttribute("data-position"));
      if (position >= lo && position <= hi) e.classList.add("selected");
    });
    if (!bar) return;
    bar.hidden = false;
    bar.querySelectorAll("[data-range=start]").forEach(function (i) { i.value = lo; });
    bar.querySelectorAll("[data-range=end]").forEach(function (i) { i.value = hi; });
    bar.querySelector("[data-range-prefix]").textContent = picking ? "Start:" : "Selected";
    bar.querySelector("[data-range-label]").textContent = picking
      ? "#" + lo + " — tap another number to end the range"
      : lo === hi ? "#" + lo : "#" + lo + " – #" + hi;
    bar.querySelector(".sel-label").classList.toggle("picking", picking);
    var exp = bar.querySelector("[data-export]");
    if (exp) exp.href = exp.getAttribute("data-export") + "?start_position=" + lo + "&end_position=" + hi;
  }
  // A range typed as from/to (keyboard, touch) selects like two clicks; a page opened with
  // ?from=&to= starts with it selected.
  document.addEventListener("submit", function (evt) {
    var form = evt.target.closest("#range-form");
    if (!form) return;
    var start = Number(form.elements.from.value), end = Number(form.elements.to.value);
    if (!start || !end) return;  // let the browser show what is missing
    evt.preventDefault();
    selection.start = start;
    selection.end = end;
    paintSelection();
    var first = document.querySelector("#selection summary, #selection button");
    if (first) first.focus();
  });
  document.addEventListener("DOMContentLoaded", function () {
    var bar = document.getElementById("selection");
    if (bar && bar.hasAttribute("data-start")) {
      selection.start = Number(bar.getAttribute("data-start"));
      selection.end = Number(bar.getAttribute("data-end"));
      paintSelection();
    }
  });

  document.addEventListener("click", function (evt) {
    var pick = evt.target.closest("[data-pick]");
    if (pick) {
      // Ranges are working-context positions (an ordinary event's position is its seq).
      var position = Number(pick.getAttribute("data-pick"));
      if ((evt.shiftKey || picking) && selection.start !== null) {
        selection.end = position;
        picking = false;
      } else {
        selection.start = position;
        selection.end = position;
        picking = tapMode();
      }
      paintSelection();
      return;
    }
    if (evt.target.closest("[data-clear-selection]")) {
      picking = false;
      selection.start = selection.end = null;
      paintSelection();
    }
  });

  // The timeline is part of the page's one scroll: it opens at its newest event (the bottom of
  // the page), and follows the live tail when the reader is already there. Its loaders are
  // sentinels htmx watches with an IntersectionObserver on the viewport.
  function timelineBox() { return document.getElementById("timeline-scroll"); }
  function doc() { return document.scrollingElement || document.documentElement; }
  // "The bottom" is the timeline's end, not the page's: on a phone the side panel follows it.
  function timelineEnd() { return timelineBox().getBoundingClientRect().bottom - window.innerHeight; }
  function atBottom() {
    // near the timeline's end, but not further down reading the side panel (unless it all fits)
    var end = timelineEnd();
    return end < 80 && (end > -160 || doc().scrollHeight <= window.innerHeight + 1);
  }
  function toBottom() { window.scrollBy(0, timelineEnd() + 8); }
  var stick = true;
  // Undo on a collapse card reloads the page at the card's originals (?around=); the first of
  // them is put where the card was on the screen, so the reader stays in place.
  var PLACE = "contextstore.keepPlace";
  document.addEventListener("submit", function (evt) {
    var form = evt.target.closest("[data-keep-place]");
    var card = form && form.closest("[data-start]");
    if (!card) return;
    try {
      window.sessionStorage.setItem(PLACE, JSON.stringify({
        path: window.location.pathname, position: card.getAttribute("data-start"),
        top: card.getBoundingClientRect().top }));
    } catch (e) { /* private mode: the page opens at the originals a third down */ }
  }, true);
  function keptPlace(box) {
    var place = null;
    try {
      place = JSON.parse(window.sessionStorage.getItem(PLACE));
      window.sessionStorage.removeItem(PLACE);
    } catch (e) { return false; }
    if (!place || place.path !== window.location.pathname) return false;
    var first = box.querySelector('.event[data-position="' + Number(place.position) + '"]');
    if (!first) return false;
    window.scrollTo(0, first.getBoundingClientRect().top + window.scrollY - place.top);
    return true;
  }
  document.addEventListener("DOMContentLoaded", function () {
    var box = timelineBox();
    if (!box) return;
    if (keptPlace(box)) {
      stick = false;
      highlight(box);
      return;
    }
    // A permalink (?around=) opens with its event a third down the window; otherwise at the
    // newest event.
    var target = box.querySelector(".event.target");
    var around = /[?&]around=(\d+)/.exec(window.location.search);
    if (!target && around) {
      // an event shown inside a card (an LLM call's LLMComplete): the card that holds it
      box.querySelectorAll("[data-seq]").forEach(function (e) {
        if (Number(e.getAttribute("data-seq")) <= Number(around[1])) target = e;
      });
    }
    if (target) {
      window.scrollTo(0, target.getBoundingClientRect().top + window.scrollY - window.innerHeight / 3);
      stick = false;
      // Jump, next/previous error and permalinks land on the event: focused (a keyboard or
      // screen-reader user starts there), outlined by .target, without a second scroll.
      if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
      target.focus({preventScroll: true});
    } else {
      toBottom();
    }
    highlight(box);
  });
  // A reader who jumps to the top of the page (Home, the scrollbar, a click into the filters)
  // came for the filters and the jump form, not for older events: loading them there would
  // push those controls out of view, again on every try. The loader waits as a link; it loads
  // when scrolled to from within the timeline (the page's header out of view) or followed.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    var box = timelineBox();
    if (box && elt.parentNode === box && elt.classList.contains("older")
        && box.getBoundingClientRect().top > window.innerHeight / 4) {
      evt.preventDefault();
    }
  });
  // Older events go in above what the reader looks at: keep that in place, so the next
  // "load older" marker stays above the viewport instead of firing again at once.
  var older = null;
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var box = timelineBox();
    var target = evt.detail.target;
    stick = !!box && target && target.id === "tail" && atBottom();
    if (box && target && target.classList.contains("older")) {
      older = { height: doc().scrollHeight, top: window.scrollY };
    }
  });
  var newer = false;
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var target = evt.detail.target;
    newer = !!(target && target.classList && target.classList.contains("newer"));
  });
  document.addEventListener("htmx:afterSwap", function () {
    var box = timelineBox();
    if (box && older) {
      window.scrollTo(0, older.top + doc().scrollHeight - older.height);
      bound(box, false);  // pages came in above: drop the newest rows
    } else if (box && newer) {
      bound(box, true);  // pages came in below: drop the oldest rows
    }
    older = null;
    newer = false;
  });

  // The timeline keeps at most data-max-rows rows: scrolling far one way drops the rows at the
  // other end and puts a loader there instead, so a long read does not grow the page forever.
  function rowSeq(el, newest) {
    // a call or tool card holds events after the one it stands at: its newest one is data-last
    var s = (newest && el.getAttribute("data-last")) || el.getAttribute("data-seq") || el.getAttribute("data-tool");
    return s ? Number(s) : null;
  }
  function loader(kind, url) {
    var div = document.createElement("div");
    div.className = kind;
    div.setAttribute("hx-get", url);
    // an older loader may be passed over at the page's top (above) and fire when next in view
    div.setAttribute("hx-trigger", kind === "older" ? "intersect" : "intersect once");
    if (kind === "older") div.setAttribute("hx-sync", "this:drop");
    div.setAttribute("hx-swap", "outerHTML");
    var a = document.createElement("a");
    a.href = url.replace(/newer=/, "around=");
    a.textContent = kind === "older" ? "Load older events" : "Load newer events";
    div.appendChild(a);
    return div;
  }
  function bound(box, dropOldest) {
    var max = Number(box.getAttribute("data-max-rows")) || 0;
    var base = box.getAttribute("data-base");
    if (!max || !base) return;
    var rows = Array.prototype.filter.call(box.children, function (c) {
      return c.matches("article, section.tool-card, .run-head");
    });
    if (rows.length <= max) return;
    var drop = rows.length - max;
    var kept = dropOldest ? rows.slice(drop) : rows.slice(0, rows.length - drop);
    var victims = dropOldest ? rows.slice(0, drop) : rows.slice(rows.length - drop);
    var edge = null, i;
    if (dropOldest) {
      for (i = 0; i < kept.length && edge === null; i++) edge = rowSeq(kept[i]);
    } else {
      for (i = kept.length - 1; i >= 0 && edge === null; i--) edge = rowSeq(kept[i], true);
    }
    if (edge === null) return;
    var height = doc().scrollHeight, top = window.scrollY;
    victims.forEach(function (v) { v.remove(); });
    var fresh;
    if (dropOldest) {
      box.querySelectorAll(":scope > .older").forEach(function (o) { o.remove(); });
      fresh = loader("older", base + "before=" + edge);
      box.insertBefore(fresh, box.firstElementChild);
      window.scrollTo(0, top - (height - doc().scrollHeight));  // what the reader sees stays put
    } else {
      box.querySelectorAll(":scope > .newer, :scope > #tail, :scope > .older:last-child").forEach(function (o) {
        if (o !== box.firstElementChild) o.remove();
      });
      fresh = loader("newer", base + "newer=" + edge);
      box.appendChild(fresh);
    }
    if (window.htmx) window.htmx.process(fresh);
  }
  // Search matches are marked in the text shown (text nodes only: nothing is parsed as HTML).
  function highlight(root) {
    var input = document.querySelector(".filters input[name=q]");
    var q = input ? input.value.trim().toLowerCase() : "";
    if (!q || !root) return;
    root.querySelectorAll(".event .content, .event .json-tree").forEach(function (el) {
      var walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      var nodes = [];
      while (walker.nextNode()) nodes.push(walker.currentNode);
      nodes.forEach(function (node) {
        if (node.parentElement.closest("mark")) return;
        var text = node.nodeValue, lower = text.toLowerCase(), at = lower.indexOf(q);
        if (at === -1) return;
        var frag = document.createDocumentFragment(), last = 0;
        while (at !== -1) {
          frag.appendChild(document.createTextNode(text.slice(last, at)));
          var mark = document.createElement("mark");
          mark.textContent = text.slice(at, at + q.length);
          frag.appendChild(mark);
          last = at + q.length;
          at = lower.indexOf(q, last);
        }
        frag.appendChild(document.createTextNode(text.slice(last)));
        node.parentNode.replaceChild(frag, node);
      });
    });
  }

  // A saved view saves the filters the page shows now: the list's filters change the address
  // (hx-push-url) after the menu was drawn.
  document.addEventListener("submit", function (evt) {
    var form = evt.target.closest("form[data-save-view]");
    if (form) form.elements.query.value = window.location.search.replace(/^\?/, "");
  });

  document.addEventListener("htmx:afterSettle", function (evt) {
    var box = timelineBox();
    if (!box) return;
    highlight(box);
    if (stick || (evt.detail.target && evt.detail.target.id === "timeline")) toBottom();
    stick = false;
    paintSelection();
  });
})();
