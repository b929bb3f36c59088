// The server's admin-only views for the console (`/.console/api/namespaces`, `connections`,
// `load`): snapshots taken when asked, with the console's credential in its `Authorization` header.

import { el } from "./dom.js";
import { RESTError } from "./rest.js";

/** GET `/.console/api/<view>` with `parameters`; resolves with the JSON, or throws a RESTError. */
export async function adminView(app, view, parameters = {}) {
    const pairs = Object.entries(parameters).filter(([, value]) => value !== null && value !== undefined && value !== "");
    const query = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join("&");
    const headers = app.rest ? app.rest.headers() : {};
    const response = await fetch(`/.console/api/${view}${query ? `?${query}` : ""}`, { headers, cache: "no-store" });
    const text = await response.text();
    let body = null;
    try {
        body = JSON.parse(text);
    } catch {
        // Not JSON: the text is the message.
    }
    if (!response.ok) throw new RESTError(response.status, (body && body.error) || text || `HTTP ${response.status}`);
    return body;
}

/** What the page says for a view the server refused: 401/403 need the admin credential. */
export function refusalText(what, error) {
    if (error.status === 401 || error.status === 403) return `${what} is for the admin only (the server answered ${error.status}).`;
    return `Could not read ${what.toLowerCase()}: ${error.message}`;
}

/**
 * A view's refusal, in place of its content: what it needs, the server's words, and a button to
 * sign in (app.askForCredential).
 */
export function refusalBlock(app, what, error) {
    const admin = error.status === 401 || error.status === 403;
    return el(
        "div",
        { class: "ops-refusal", role: "alert", "data-refused": String(error.status || "") },
        el("h3", { text: admin ? "Admin only" : "Not available" }),
        el("p", { text: refusalText(what, error) }),
        admin ? el("p", { text: "Sign in with the server's admin secret (--admin-secret) to see it." }) : null,
        el("p", { class: "hint", text: `The server said: ${error.message}` }),
        admin && app.askForCredential ? el("button", { type: "button", class: "primary", "data-action": "sign-in-admin", text: "Sign in", onclick: () => app.askForCredential() }) : null,
    );
}

/**
 * Calls `sample` now and then every `interval` ms after each call finished, until stop() (a slow
 * server is never asked twice at once).
 */
export function poll(sample, interval = 1000) {
    let timer = null;
    let stopped = false;
    const run = async () => {
        if (stopped) return;
        try {
            await sample();
        } finally {
            if (!stopped) timer = setTimeout(run, interval);
        }
    };
    run();
    return {
        stop() {
            stopped = true;
            clearTimeout(timer);
        },
    };
}
