// Keyboard triage for the candidates queue: j/k move, a approve, e edit, r reject, d defer,
// x select (Shift+j/k extend it; A approves it, R rejects it), o open, z undo the last decision, ? help. Other queues' cards declare their keys with data-key (the conflicts
// queue: 1/2 keep, s split, m merge, n dismiss). Every key presses a real button or link, so the server decides.
(function () {
  "use strict";
  function cards() { return Array.from(document.querySelectorAll("#queue [data-card]")); }
  function current() { return document.querySelector("#queue [data-card].is-current"); }
  function open(card) { return card && !card.hasAttribute("data-decided"); }

  function focusCard(card, stay) {
    if (!card) return;
    cards().forEach(function (c) { c.classList.remove("is-current"); });
    card.classList.add("is-current");
    card.focus({ preventScroll: true });
    if (!stay) card.scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    var list = cards(), cur = current(), i = list.indexOf(cur);
    if (i < 0) { focusCard(list.find(open) || list[0]); return; }
    for (var j = i + step; j >= 0 && j < list.length; j += step) {
      if (open(list[j])) { focusCard(list[j]); return; }
    }
  }
  function openPanel(card, name) {
    var panel = card.querySelector('details[data-panel="' + name + '"]');
    if (!panel) return;
    card.querySelectorAll("details[data-panel]").forEach(function (d) { d.open = d === panel; });
    var field = panel.querySelector("input:not([type=hidden]), textarea");
    if (field) { field.focus(); if (field.select) field.select(); }
  }
  function select(card, on) {
    var box = open(card) && card.querySelector("[data-select]");
    if (box) { box.checked = on; updateSelected(); }
  }
  // A and R act on the selection: A presses "Approve selected", R asks the reason (Enter rejects).
  function bulkButton(action) {
    var button = document.querySelector('#bulk-form [data-bulk="' + action + '"]');
    if (button && document.querySelectorAll("[data-select]:checked").length) button.click();
  }
  function updateSelected() {
    var n = document.querySelectorAll("[data-select]:checked").length;
    document.querySelectorAll("[data-selected-count]").forEach(function (el) { el.textContent = n; });
  }

  document.addEventListener("keydown", function (ev) {
    var t = ev.target, typing = t.matches && t.matches("input, textarea, select");
    if (typing) {
      if (ev.key === "Escape") {
        var d = t.closest("details"); if (d) { d.open = false; var c = t.closest("[data-card]"); if (c) focusCard(c); }
      } else if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && t.form) {
        ev.preventDefault(); t.form.requestSubmit();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "?") { var dlg = document.getElementById("keys-help"); if (dlg) dlg.showModal(); return; }
    if (!document.getElementById("queue")) return;
    var card = current();
    // A card htmx swapped in a moment ago is wired only when it settles: wire it now, or a key pressed in
    // between would post its form as a plain one and leave the queue for the card's own page.
    if (card && window.htmx) window.htmx.process(card);
    // Cards of the other queues name their own keys: data-key on a button (pressed) or a panel (opened).
    var keyed = open(card) && /^[a-z0-9]$/.test(ev.key) ? card.querySelector('[data-key="' + ev.key + '"]') : null;
    if (keyed) {
      if (keyed.matches("details[data-panel]")) openPanel(card, keyed.dataset.panel); else keyed.click();
      ev.preventDefault();
      return;
    }
    switch (ev.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": if (open(card)) { var b = card.querySelector('[data-action="approve"]'); if (b) b.click(); } break;
      case "d": if (open(card)) { var b2 = card.querySelector('[data-action="defer"]'); if (b2) b2.click(); } break;
      case "e": if (open(card)) openPanel(card, "edit"); break;
      case "r": if (open(card)) openPanel(card, "reject"); break;
      case "x": if (open(card)) { var s = card.querySelector("[data-select]"); if (s) select(card, !s.checked); } break;
      case "o": if (card && card.dataset.entryUrl) { keepPosition(card); window.location = card.dataset.entryUrl; } break;
      case "Enter": case " ": if (card && card.hasAttribute("data-line")) card.querySelector("[data-expand]").click(); else return; break;
      case "J": select(card, true); move(1); select(current(), true); break;
      case "K": select(card, true); move(-1); select(current(), true); break;
      case "A": bulkButton("approve"); break;
      case "R": var why = document.querySelector("[data-bulk-reason]"); if (why) why.focus(); break;
      case "z": undoLast(); break;
      default: return;
    }
    ev.preventDefault();
  });

  // Undo: a decided card offers it for data-undo-seconds (the server refuses it after that too), and so does
  // a bulk action's "Undo all"; z presses the latest Undo still in the page. After a bulk action that is its
  // "Undo all": z takes the whole bulk back, and each card's own Undo still takes back that card alone.
  var undoStack = [];
  function offerUndo(form, latest) {
    if (!form || form.dataset.offered) return;
    form.dataset.offered = "1";
    if (latest !== false) undoStack.push(form);
    setTimeout(function () { if (form.isConnected) form.remove(); }, Number(form.dataset.undoSeconds) * 1000);
  }
  function offerCard(card, latest) { offerUndo(card.querySelector("form[data-undo-seconds]"), latest); }
  function offerBulk() {
    var all = document.querySelector("#bulk-result form[data-undo-all]");
    document.querySelectorAll("#queue [data-decided]").forEach(function (card) { offerCard(card, !all); });
    offerUndo(all);
  }
  // Offered as soon as the decided card (or a bulk's answer, its cards swapped in out of band before it) is
  // in the page (htmx settles it some milliseconds later): a z pressed in between still undoes it.
  document.addEventListener("htmx:afterSwap", function (ev) {
    var id = ev.detail.target && ev.detail.target.id;
    if (id === "bulk-result") {
      // The keys go back to the queue at once: a z (or j) typed right after Enter must not land in the reason.
      var why = document.querySelector("[data-bulk-reason]");
      if (why && document.activeElement === why) why.blur();
      offerBulk();
      return;
    }
    var swapped = id ? document.getElementById(id) : null;
    if (swapped && swapped.matches && swapped.matches("[data-decided]")) offerCard(swapped);
  });
  function undoLast() {
    while (undoStack.length) {
      var form = undoStack.pop();
      var button = form.isConnected && form.querySelector('[data-action="undo"]');
      // Not settled yet, the form is not wired: wire it, as for the current card above.
      if (button) { if (window.htmx) window.htmx.process(form); button.click(); return; }
    }
  }

  // A copy button (a new token's secret): the clipboard, or the text selected for Ctrl+C where it is refused.
  function copyText(button) {
    var source = document.getElementById(button.dataset.copy), said = button.parentNode.querySelector("[data-copied]");
    function selectIt() {
      var range = document.createRange(); range.selectNodeContents(source);
      var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
      if (said) said.textContent = "Selected: press Ctrl+C to copy.";
    }
    if (!navigator.clipboard) { selectIt(); return; }
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      if (said) said.textContent = "Copied.";
    }, selectIt);
  }

  // One notion of "current card": wherever focus goes (Tab, a click, a link inside a card), that card is
  // current, so a key never acts on a card other than the one the reviewer is on.
  function markCurrent(card) {
    if (!card || card.classList.contains("is-current")) return;
    cards().forEach(function (c) { c.classList.remove("is-current"); });
    card.classList.add("is-current");
  }
  document.addEventListener("focusin", function (ev) {
    var card = ev.target.closest && ev.target.closest("#queue [data-card]");
    if (card) markCurrent(card);
  });

  document.addEventListener("change", function (ev) { if (ev.target.matches("[data-select]")) updateSelected(); });
  document.addEventListener("click", function (ev) {
    var copy = ev.target.closest("[data-copy]");
    if (copy) { copyText(copy); return; }
    var help = ev.target.closest("[data-keys-help]");
    if (help) { document.getElementById("keys-help").showModal(); return; }
    var card = ev.target.closest("#queue [data-card]");
    if (card && open(card)) focusCard(card);
  });

  // After a decision the card is swapped for its decided stub: move on to the next open card.
  // (After the settle, not the swap: htmx's settle puts back the server's class on an element it replaced
  // by one with the same id, which would drop "is-current" from a card that came back.)
  document.addEventListener("htmx:afterSettle", function (ev) {
    var el = ev.detail.elt && ev.detail.elt.id ? document.getElementById(ev.detail.elt.id) : null;
    if (ev.detail.target && ev.detail.target.id === "bulk-result") {  // a bulk decision, answered in place
      var summary = ev.detail.target.isConnected ? ev.detail.target : document.getElementById("bulk-result");
      lastDecision = summary ? (summary.querySelector(".flash") || summary).textContent : "";
      offerBulk();
      // What was refused stays on screen, listed, and is no longer selected: a new selection starts empty.
      document.querySelectorAll("[data-select]:checked").forEach(function (box) { box.checked = false; });
      if (!open(current())) move(1);
      updateSelected();
      return;
    }
    var swapped = ev.detail.target && document.getElementById(ev.detail.target.id);
    var card = swapped || el;
    if (!card || !card.matches || !card.matches("[data-card]")) { if (!current()) move(1); return; }
    if (card.hasAttribute("data-decided")) {
      lastDecision = card.querySelector("[role=status]").textContent;
      offerCard(card);
      card.classList.add("is-current");
      move(1);
      if (current() === card) card.classList.remove("is-current");
    } else {
      focusCard(card);
      var panel = card.querySelector("details[open] input:not([type=hidden]), details[open] textarea");
      if (panel) panel.focus();
    }
    updateSelected();
  });

  // Position: the current card is in the URL's fragment when the reviewer leaves with o, so Back returns to it.
  function keepPosition(card) { history.replaceState(history.state, "", "#" + card.id); }
  // The end state: once no card on the page is open, say so (all done, or where the rest is).
  function updateEnd() {
    var end = document.querySelector("[data-queue-end]");
    if (end) end.hidden = !cards().length || cards().some(open);
  }
  document.addEventListener("htmx:afterSettle", updateEnd);

  // The live region: after a decision, what happened and the new count; after filtering, the count.
  var announced = "", lastDecision = "";
  function announce() {
    var region = document.getElementById("announce"), count = document.getElementById("queue-count");
    if (!region || !count) return;
    var text = (lastDecision + " " + count.textContent).replace(/\s+/g, " ").trim();
    if (text !== announced) { region.textContent = text; announced = text; }
  }
  // One answer settles several elements (the card, the count, the progress): say it once, for the answer.
  // A request the page makes on its own (a card's impact, loaded once in view) is not the reviewer's: it
  // neither clears nor repeats what their last decision said.
  function background(ev) {
    var elt = ev.detail && ev.detail.elt;
    return !!(elt && elt.closest && elt.closest("[data-background]"));
  }
  document.addEventListener("htmx:beforeRequest", function (ev) { if (!background(ev)) lastDecision = ""; });
  document.addEventListener("htmx:afterSettle", function (ev) { if (!background(ev)) setTimeout(announce, 0); });

  document.addEventListener("DOMContentLoaded", function () {
    if (!document.getElementById("queue")) return;
    var kept = location.hash && document.querySelector("#queue #" + CSS.escape(location.hash.slice(1)) + "[data-card]");
    // A fresh visit opens at the top, with the count and the filters in view; the first card is current
    // (j, a... act on it) without scrolling there. Back from a card's page returns to that card.
    if (kept && open(kept)) focusCard(kept); else focusCard(cards().find(open) || cards()[0], true);
    updateEnd();
  });
})();
