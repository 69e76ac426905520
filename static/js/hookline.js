// hookline dashboard: progressive enhancement only. Every page and form works
// without this file; it adds the CSRF header to htmx requests, copy buttons,
// and a visible message when an htmx request fails.
(function () {
  "use strict";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // htmx requests do not post the hidden csrf_token field when they are not
  // form submissions (hx-post on a button, hx-delete, polling), so every one
  // carries the token from the page's meta tag as a header instead.
  // A form swapped back with its errors (422) takes the focus to its error
  // summary, so keyboard and screen-reader users land on what to fix.
  document.addEventListener("htmx:afterSwap", function (evt) {
    if (!evt.detail.xhr || evt.detail.xhr.status !== 422) {
      return;
    }
    var summary = evt.detail.target.querySelector(".form-errors, [role=alert]");
    if (summary) {
      if (!summary.hasAttribute("tabindex")) {
        summary.setAttribute("tabindex", "-1");
      }
      summary.focus();
      summary.scrollIntoView({ block: "center" });
    }
  });

  document.addEventListener("htmx:configRequest", function (evt) {
    var token = csrfToken();
    if (token) {
      evt.detail.headers["X-CSRF-Token"] = token;
    }
  });

  // Copy buttons are rendered hidden, because they do nothing without
  // JavaScript; the value itself stays selectable.
  function enhance(root) {
    var buttons = root.querySelectorAll("[data-copy][hidden]");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
    }
  }

  function copyFallback(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    var ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    return ok;
  }

  function announce(button, text) {
    var box = button.closest("[data-copybox]");
    var status = box ? box.querySelector("[data-copy-status]") : null;
    if (status) {
      status.textContent = text;
    }
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = text;
    window.clearTimeout(button._hooklineTimer);
    button._hooklineTimer = window.setTimeout(function () {
      button.textContent = label;
      if (status) {
        status.textContent = "";
      }
    }, 2000);
  }

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest("[data-copy]");
    if (!button) {
      return;
    }
    var el = document.getElementById(button.getAttribute("data-copy"));
    if (!el) {
      return;
    }
    var text = el.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { announce(button, "Copied"); },
        function () { announce(button, copyFallback(el) ? "Copied" : "Press Ctrl+C"); }
      );
    } else {
      announce(button, copyFallback(el) ? "Copied" : "Press Ctrl+C");
    }
  });

  // htmx ignores error responses by default, which looks like a dead button.
  // Show what happened in the flash area instead.
  function flash(kind, message) {
    var area = document.getElementById("flashes");
    if (!area) {
      return;
    }
    // One message from this script at a time: a burst of failed polls
    // should not stack up a wall of identical errors.
    var old = area.querySelector("[data-client-flash]");
    if (old) {
      old.remove();
    }
    var p = document.createElement("p");
    p.className = "flash flash-" + kind;
    p.setAttribute("data-testid", "flash");
    p.setAttribute("data-client-flash", "");
    p.textContent = message;
    area.appendChild(p);
  }

  document.addEventListener("htmx:responseError", function (evt) {
    var xhr = evt.detail.xhr;
    var status = xhr ? xhr.status : 0;
    var msg = "The request failed (" + status + "). Reload the page and try again.";
    if (status === 401) {
      msg = "Your sign-in has expired. Reload the page to sign in again.";
    } else if (status === 403) {
      msg = "Your role does not allow this action.";
    } else if (status === 409) {
      msg = "Someone else changed this first. Reload the page to see the current state.";
    } else if (status === 503) {
      msg = "hookline cannot reach its database right now. Try again in a moment.";
    }
    flash("error", msg);
  });

  document.addEventListener("htmx:sendError", function () {
    flash("error", "Could not reach hookline. Check your connection and try again.");
  });

  // The Content-Security-Policy allows no inline script or handler, so
  // what pages once did inline is declared with data attributes:
  // data-confirm on a button or form asks before it submits;
  // data-autosubmit-change submits a select's form when it changes;
  // data-autosubmit submits a form as soon as the page loads (the portal
  // sign-in page, whose Continue button works without script).
  document.addEventListener("click", function (evt) {
    var el = evt.target.closest("button[data-confirm], input[data-confirm]");
    if (el && !window.confirm(el.getAttribute("data-confirm"))) {
      evt.preventDefault();
    }
  });
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (form.hasAttribute && form.hasAttribute("data-confirm") && !window.confirm(form.getAttribute("data-confirm"))) {
      evt.preventDefault();
    }
  });
  document.addEventListener("change", function (evt) {
    var el = evt.target;
    if (el.hasAttribute && el.hasAttribute("data-autosubmit-change") && el.form) {
      el.form.submit();
    }
  });

  function autosubmit(root) {
    var form = root.querySelector("form[data-autosubmit]");
    if (form) {
      form.submit();
    }
  }

  document.addEventListener("htmx:load", function (evt) {
    enhance(evt.target);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { enhance(document); autosubmit(document); });
  } else {
    enhance(document);
    autosubmit(document);
  }
})();
