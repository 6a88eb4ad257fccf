// Script of the operators' web console. The pages are rendered on the
// server; this file only
//   - sends the action forms as JSON to the console API, with the CSRF
//     header and the idempotency key the server rendered into the form;
//   - listens to the console's event stream, lists new events and refreshes
//     the page's content in place (no reload);
//   - counts down to the TSO deadline.
// It is loaded from the console's own origin (the Content-Security-Policy
// allows no inline script) and writes to the page through textContent and
// parsed server pages only, so no event text is ever parsed as HTML.
(function () {
  "use strict";

  var KINDS = {
    "run.started": "Lauf gestartet",
    "run.succeeded": "Lauf erfolgreich",
    "run.failed": "Lauf fehlgeschlagen",
    "stage.retry": "Stufe wird wiederholt",
    "stage.skipped": "Stufe übersprungen",
    "inbox.processed": "Datei verarbeitet",
    "inbox.rejected": "Datei abgewiesen",
    "inbox.failed": "Datei gescheitert",
    "inbox.retried": "Datei erneut eingereiht",
    "schedule.sent": "Fahrplan gesendet",
    "tso.answer": "Antwort des ÜNB",
    "trades": "Handelsgeschäfte"
  };

  function meta(name) {
    var el = document.querySelector('meta[name="' + name + '"]');
    return el ? el.getAttribute("content") || "" : "";
  }

  function readCookie(name) {
    var parts = document.cookie ? document.cookie.split(";") : [];
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i].trim();
      var eq = part.indexOf("=");
      if (eq > 0 && part.slice(0, eq) === name) {
        try {
          return decodeURIComponent(part.slice(eq + 1));
        } catch (e) {
          return part.slice(eq + 1);
        }
      }
    }
    return "";
  }

  function show(id, text) {
    var el = document.getElementById(id);
    if (!el) {
      return;
    }
    el.textContent = text;
    el.hidden = !text;
    if (text && id === "fehler") {
      el.focus();
    }
  }

  // message turns an error body of the API into one German sentence with
  // the API's own detail, which names the field or the state that failed.
  function message(status, body) {
    var detail = body && body.detail;
    if (Array.isArray(detail)) {
      detail = detail.map(function (p) {
        return (p.loc ? p.loc.join(".") + ": " : "") + p.msg;
      }).join("; ");
    } else if (detail && typeof detail === "object") {
      detail = detail.message || JSON.stringify(detail);
    }
    if (!detail && body && body.message) {
      detail = body.message;
    }
    var prefix = {
      401: "Ihre Sitzung ist abgelaufen. Bitte melden Sie sich erneut an.",
      403: "Diese Aktion ist nicht erlaubt.",
      404: "Nicht gefunden.",
      409: "Der Zustand hat sich geändert.",
      422: "Die Eingaben sind ungültig.",
      429: "Zu viele Anfragen; bitte kurz warten.",
      503: "Der Dienst ist gerade nicht verfügbar."
    }[status] || "Die Aktion ist fehlgeschlagen (" + status + ").";
    return detail ? prefix + " " + detail : prefix;
  }

  function formBody(form) {
    var fixed = form.getAttribute("data-body");
    if (fixed) {
      return fixed;
    }
    var body = {};
    var fields = form.querySelectorAll("input[name], select[name]");
    for (var i = 0; i < fields.length; i++) {
      if (fields[i].value !== "") {
        body[fields[i].name] = fields[i].value;
      }
    }
    return JSON.stringify(body);
  }

  function submit(ev) {
    var form = ev.target;
    if (!form.hasAttribute || !form.hasAttribute("data-api")) {
      return;
    }
    ev.preventDefault();
    var ask = form.getAttribute("data-confirm");
    if (ask && !window.confirm(ask)) {
      return;
    }
    var method = form.getAttribute("data-method") || "POST";
    var headers = { "Accept": "application/json" };
    var csrfHeader = meta("sb-csrf-header");
    var token = readCookie(meta("sb-csrf-cookie"));
    if (csrfHeader && token) {
      headers[csrfHeader] = token;
    }
    var key = form.getAttribute("data-key");
    if (key) {
      headers["Idempotency-Key"] = key;
    }
    var init = { method: method, credentials: "same-origin", headers: headers };
    if (method !== "DELETE") {
      headers["Content-Type"] = "application/json";
      init.body = formBody(form);
    }
    var button = form.querySelector("button");
    if (button) {
      button.disabled = true;
    }
    show("fehler", "");
    fetch(form.getAttribute("data-api"), init).then(function (res) {
      // A deletion whose target is gone already has had its effect.
      if (res.ok || (method === "DELETE" && res.status === 404)) {
        var next = form.getAttribute("data-next");
        if (next) {
          window.location.assign(next);
          return;
        }
        show("meldung", res.status === 202 ? "Auftrag angenommen." : "Erledigt.");
        refresh();
        return;
      }
      return res.json().then(function (b) {
        return b;
      }, function () {
        return {};
      }).then(function (b) {
        show("fehler", message(res.status, b));
      });
    }, function () {
      show("fehler", "Der Server ist nicht erreichbar.");
    }).then(function () {
      if (button) {
        button.disabled = false;
      }
    });
  }

  // refresh fetches this page again and swaps its content, keeping the
  // tables the operator opened open.
  var refreshing = null;
  function refresh() {
    if (refreshing) {
      return;
    }
    refreshing = setTimeout(function () {
      fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (res) {
        if (!res.ok) {
          throw new Error(String(res.status));
        }
        return res.text();
      }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("seite");
        var current = document.getElementById("seite");
        if (!fresh || !current) {
          return;
        }
        var open = {};
        var details = current.querySelectorAll("details[open]");
        for (var i = 0; i < details.length; i++) {
          open[details[i].querySelector("summary").textContent] = true;
        }
        current.replaceChildren.apply(current, Array.prototype.slice.call(fresh.childNodes).map(function (n) {
          return document.importNode(n, true);
        }));
        var now = current.querySelectorAll("details");
        for (var j = 0; j < now.length; j++) {
          if (open[now[j].querySelector("summary").textContent]) {
            now[j].open = true;
          }
        }
        countdown();
      }).catch(function () {
        show("fehler", "Die Seite konnte nicht aktualisiert werden.");
      }).then(function () {
        refreshing = null;
      });
    }, 500);
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  // live opens the event stream after the event id after.
  function live(after) {
    var url = meta("sb-live");
    var list = document.getElementById("live");
    var state = document.getElementById("live-status");
    if (!url || !list || !window.EventSource) {
      return;
    }
    var last = after;
    var source = new EventSource(url + (after ? "?last_event_id=" + encodeURIComponent(after) : ""));
    source.onopen = function () {
      state.textContent = "verbunden";
    };
    source.onerror = function () {
      // EventSource reconnects by itself after a stream that ended (the
      // server ends each one after 30 minutes), but gives up on a refused
      // reconnect. A session signed out or expired (401) or a person who is
      // no longer an operator (403) stays refused; anything else (a replica
      // draining for a restart answers 503) is tried again after a pause.
      if (source.readyState !== EventSource.CLOSED) {
        state.textContent = "Verbindung unterbrochen, verbinde neu …";
        return;
      }
      fetch("/v1/console/events?limit=1", {credentials: "same-origin"}).then(function (res) {
        if (res.status === 401 || res.status === 403) {
          state.textContent = "Sitzung beendet – bitte neu anmelden";
          return;
        }
        state.textContent = "Verbindung unterbrochen, verbinde neu …";
        setTimeout(function () { live(last); }, 5000);
      }).catch(function () {
        setTimeout(function () { live(last); }, 5000);
      });
    };
    function onEvent(ev) {
      var e;
      if (ev.lastEventId) {
        last = ev.lastEventId;
      }
      try {
        e = JSON.parse(ev.data);
      } catch (err) {
        return;
      }
      var at = new Date(e.at);
      var li = document.createElement("li");
      li.className = "live__item live__item--" + String(e.kind).replace(/[^a-z]/g, "-");
      li.textContent = pad(at.getHours()) + ":" + pad(at.getMinutes()) + ":" + pad(at.getSeconds()) + " " +
        (KINDS[e.kind] || e.kind) + (e.subject ? " · " + e.subject : "") + (e.delivery_day ? " · " + e.delivery_day : "");
      list.insertBefore(li, list.firstChild);
      while (list.children.length > 20) {
        list.removeChild(list.lastChild);
      }
      refresh();
    }
    Object.keys(KINDS).forEach(function (k) {
      source.addEventListener(k, onEvent);
    });
    source.addEventListener("message", onEvent);
  }

  // countdown shows the time left until the TSO deadline.
  function countdown() {
    var el = document.getElementById("frist");
    if (!el) {
      return;
    }
    var end = Date.parse(el.getAttribute("datetime"));
    if (isNaN(end)) {
      return;
    }
    var left = Math.round((end - Date.now()) / 1000);
    var a = Math.abs(left);
    var text = Math.floor(a / 3600) + " h " + pad(Math.floor(a % 3600 / 60)) + " min " + pad(a % 60) + " s";
    if (a >= 48 * 3600) {
      text = Math.floor(a / 86400) + " d " + pad(Math.floor(a % 86400 / 3600)) + " h";
    }
    el.textContent = left >= 0 ? "noch " + text : "abgelaufen seit " + text;
  }

  document.addEventListener("submit", submit);
  document.addEventListener("DOMContentLoaded", function () {
    live(meta("sb-live-after"));
    countdown();
    setInterval(countdown, 1000);
  });
})();
