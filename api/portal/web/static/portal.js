// Script of the employee self-service portal. The pages are rendered on the
// server; this file only sends their forms as JSON to the portal API, redeems
// a magic link and signs out. It is loaded from the portal's own origin
// (the Content-Security-Policy allows no inline script) and touches the page
// through textContent only, so no server text is ever parsed as HTML.
(function () {
  "use strict";

  var MESSAGES = {
    invalid: "Bitte prüfen Sie Ihre Eingaben.",
    forbidden: "Diese Aktion ist nicht erlaubt. Bitte laden Sie die Seite neu.",
    noEmployee: "Für Ihr Konto ist kein Personaldatensatz hinterlegt.",
    conflict: "Der Zeitraum überschneidet sich mit einem bestehenden Eintrag.",
    unexpected: "Ein unerwarteter Fehler ist aufgetreten. Bitte versuchen Sie es später erneut.",
    linkInvalid: "Der Anmeldelink ist ungültig, abgelaufen oder wurde bereits verwendet.",
    linkRetry: "Neuen Anmeldelink anfordern"
  };
  var SIGN_IN = "/portal/anmelden";

  function meta(name) {
    var el = document.querySelector('meta[name="' + name + '"]');
    return el ? el.getAttribute("content") || "" : "";
  }

  function readCookie(name) {
    var parts = document.cookie ? document.cookie.split(";") : [];
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i].trim();
      var eq = part.indexOf("=");
      if (eq < 0 || part.slice(0, eq) !== name) {
        continue;
      }
      try {
        return decodeURIComponent(part.slice(eq + 1));
      } catch (e) {
        return part.slice(eq + 1);
      }
    }
    return "";
  }

  // csrfHeaders are the headers of every state-changing request: JSON both
  // ways, and the CSRF token from the cookie the server named in the page.
  function csrfHeaders() {
    var headers = { "Content-Type": "application/json", "Accept": "application/json" };
    var header = meta("sb-csrf-header");
    var cookie = meta("sb-csrf-cookie");
    if (header && cookie) {
      var token = readCookie(cookie);
      if (token) {
        headers[header] = token;
      }
    }
    return headers;
  }

  function send(url, method, body) {
    return fetch(url, {
      method: method || "POST",
      credentials: "same-origin",
      headers: csrfHeaders(),
      body: JSON.stringify(body || {})
    });
  }

  // readError reads the documented error body; a body that is not JSON
  // (a proxy's page, say) counts as one without details.
  function readError(res) {
    return res.json().then(function (b) {
      return b && typeof b === "object" ? b : {};
    }, function () {
      return {};
    });
  }

  // isoDate turns a typed "31.12.2026" into "2026-12-31" for browsers
  // without a date picker; date pickers already give YYYY-MM-DD.
  function isoDate(value) {
    var m = /^(\d{1,2})\.(\d{1,2})\.(\d{4})$/.exec(value);
    if (!m) {
      return value;
    }
    return m[3] + "-" + ("0" + m[2]).slice(-2) + "-" + ("0" + m[1]).slice(-2);
  }

  // formBody builds the JSON object from the form's named fields: checkboxes
  // as booleans, empty optional fields left out, dates as YYYY-MM-DD.
  function formBody(form) {
    var body = {};
    var els = form.elements;
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      if (!el.name || el.disabled || el.type === "submit" || el.type === "button" || el.type === "reset") {
        continue;
      }
      if (el.type === "checkbox") {
        body[el.name] = el.checked;
        continue;
      }
      if (el.type === "radio" && !el.checked) {
        continue;
      }
      var value = typeof el.value === "string" ? el.value.trim() : "";
      if (el.type === "date") {
        value = isoDate(value);
      }
      if (value === "" && !el.required) {
        continue;
      }
      body[el.name] = value;
    }
    return body;
  }

  function region(form, role) {
    return form.querySelector('[role="' + role + '"]');
  }

  function clearMarks(form) {
    var marked = form.querySelectorAll('[aria-invalid="true"]');
    for (var i = 0; i < marked.length; i++) {
      marked[i].removeAttribute("aria-invalid");
    }
  }

  function messageFor(status, err) {
    var detail = err && typeof err.message === "string" && err.message ? " (" + err.message + ")" : "";
    switch (status) {
      case 400: return MESSAGES.invalid + detail;
      case 403: return MESSAGES.forbidden;
      case 404: return MESSAGES.noEmployee;
      case 409: return MESSAGES.conflict + detail;
      default: return MESSAGES.unexpected;
    }
  }

  // showError puts the message in the form's alert region and moves focus
  // to the field the server named, or to the alert itself.
  function showError(form, status, err) {
    var alert = region(form, "alert");
    if (alert) {
      alert.textContent = messageFor(status, err);
    }
    var field = err && typeof err.field === "string" && err.field ? form.elements.namedItem(err.field) : null;
    if (field && typeof field.focus === "function" && field.setAttribute) {
      field.setAttribute("aria-invalid", "true");
      field.focus();
    } else if (alert) {
      alert.focus();
    }
  }

  function submitForm(form, event) {
    event.preventDefault();
    var button = form.querySelector('button[type="submit"], button:not([type]), input[type="submit"]');
    if (button && button.disabled) {
      return;
    }
    var status = region(form, "status");
    var alert = region(form, "alert");
    if (status) { status.textContent = ""; }
    if (alert) { alert.textContent = ""; }
    clearMarks(form);
    if (button) { button.disabled = true; }
    var done = function () { if (button) { button.disabled = false; } };

    send(form.getAttribute("data-api"), form.getAttribute("data-method") || "POST", formBody(form)).then(function (res) {
      if (res.ok) {
        var success = form.getAttribute("data-success");
        if (success) {
          if (status) { status.textContent = success; }
          form.reset();
          done();
          return;
        }
        var next = form.getAttribute("data-next") || location.pathname + "?gespeichert=1";
        if (form.getAttribute("data-navigate") === "replace") {
          location.replace(next);
        } else {
          location.assign(next);
        }
        return;
      }
      if (res.status === 401) {
        location.assign(SIGN_IN);
        return;
      }
      return readError(res).then(function (err) {
        showError(form, res.status, err);
        done();
      });
    }).catch(function () {
      showError(form, 0, null);
      done();
    });
  }

  // redeem runs on the magic-link landing page: the code travels in the
  // fragment, so it never reaches a server log or a Referer; it is removed
  // from the address bar before anything else happens.
  function redeem(box) {
    var hash = location.hash;
    history.replaceState(null, "", location.pathname);
    var code = new URLSearchParams(hash.replace(/^#/, "")).get("code") || "";
    var status = box.querySelector('[role="status"]');
    var alert = box.querySelector('[role="alert"]');

    function fail() {
      if (status) { status.textContent = ""; }
      if (!alert) { return; }
      alert.textContent = "";
      var p = document.createElement("p");
      p.textContent = MESSAGES.linkInvalid;
      var a = document.createElement("a");
      a.href = SIGN_IN;
      a.textContent = MESSAGES.linkRetry;
      var p2 = document.createElement("p");
      p2.appendChild(a);
      alert.appendChild(p);
      alert.appendChild(p2);
      alert.focus();
    }

    if (!code) {
      fail();
      return;
    }
    send(box.getAttribute("data-redeem-api"), "POST", { code: code }).then(function (res) {
      if (res.ok) {
        location.replace(box.getAttribute("data-next") || "/portal/");
        return;
      }
      fail();
    }).catch(fail);
  }

  function init() {
    var forms = document.querySelectorAll("form[data-api]");
    for (var i = 0; i < forms.length; i++) {
      forms[i].addEventListener("submit", submitForm.bind(null, forms[i]));
    }
    var box = document.querySelector("[data-redeem-api]");
    if (box) {
      redeem(box);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
