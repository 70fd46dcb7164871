/* taskq-console: the one script of the console (the Content-Security-Policy
 * allows no inline script).  Live pages carry data-refresh="SECONDS" on
 * <body>: they reload while nobody is typing in a form.  Elements with
 * data-live="URL" are refetched every data-every seconds and their content
 * replaced by the HTML fragment the URL returns (a run's graph); a 204, or
 * a fragment with the header X-Live-Final, is the last. */
(function () {
    "use strict";
    function busy() {
        var a = document.activeElement;
        return a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA");
    }
    document.addEventListener("DOMContentLoaded", function () {
        var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
        if (secs > 0) {
            setInterval(function () { if (!busy()) { window.location.reload(); } }, secs * 1000);
        }
        document.querySelectorAll("[data-live]").forEach(function (el) {
            var every = parseInt(el.getAttribute("data-every") || "2", 10) * 1000;
            var timer = setInterval(function () {
                fetch(el.getAttribute("data-live"), {credentials: "same-origin"})
                    .then(function (r) {
                        if (r.status === 204) { clearInterval(timer); return null; }
                        /* the last fragment there will be (a finished run's graph) */
                        if (r.headers.get("X-Live-Final")) { clearInterval(timer); }
                        return r.ok ? r.text() : null;
                    })
                    .then(function (html) { if (html !== null) { el.innerHTML = html; } })
                    .catch(function () {});
            }, every);
        });
        /* forms that ask before they act: data-confirm="the question" */
        document.querySelectorAll("form[data-confirm]").forEach(function (f) {
            f.addEventListener("submit", function (ev) {
                if (!window.confirm(f.getAttribute("data-confirm"))) { ev.preventDefault(); }
            });
        });
    });
}());
