// The console: served by canopy-server at every data location a browser opens (/users/ada, ?ns= for
// the namespace). One realtime connection carries every listen and write; REST carries paging,
// import, export and the rules document; both with the credential every client sends.

import { DataView } from "./data.js";
import { dialog, el, toast } from "./dom.js";
import { Realtime } from "./realtime.js";
import { REST } from "./rest.js";
import { RulesView } from "./rules.js";
import { ConnectionsView } from "./connections.js";
import { LoadView } from "./load.js";
import { NamespacePicker } from "./namespaces.js";
import { pathString } from "./values.js";

const CREDENTIAL_KEY = "canopy.console.credential";
/** The views of the server's own state (admin only), each polled while it is shown. */
const OPS_VIEWS = { connections: ConnectionsView, load: LoadView };

/** The namespace as the server reads it: ?ns=, else the first label of a host name that is not an IP. */
function namespaceOf(url) {
    const ns = url.searchParams.get("ns");
    if (ns) return ns;
    const host = url.hostname;
    if (host === "localhost" || host.startsWith("[") || /^[\d.]+$/.test(host) || !host.includes(".")) return null;
    return host.split(".")[0];
}

function keysOf(url) {
    return url.pathname
        .split("/")
        .filter((key) => key)
        .map((key) => {
            try {
                return decodeURIComponent(key);
            } catch {
                return key;
            }
        });
}

class Console {
    constructor() {
        const url = new URL(location.href);
        this.namespace = namespaceOf(url);
        this.focus = keysOf(url);
        this.events = 0;
        this.eventsShown = 0;
        this.identity = null;
        this.realtime = new Realtime({
            namespace: this.namespace,
            onState: (state, detail) => this.connectionState(state, detail),
            onAuthRevoked: (status, reason) => this.authRevoked(status, reason),
            onEvent: () => this.events++,
        });
        this.root = document.getElementById("app");
    }

    /** The tree the Data view shows, if it shows one. */
    get tree() {
        return this.dataView?.tree || null;
    }

    urlFor(keys, tab = this.tab) {
        const path = keys.length === 0 ? "/" : "/" + keys.map(encodeURIComponent).join("/");
        const query = this.namespace && new URL(location.href).searchParams.get("ns") ? `?ns=${encodeURIComponent(this.namespace)}` : "";
        return `${path}${query}${tab === "rules" || OPS_VIEWS[tab] ? `#${tab}` : ""}`;
    }

    async start() {
        this.renderShell();
        this.setStatus("connecting", "Connecting…");
        await this.realtime.connect();
        const saved = sessionStorage.getItem(CREDENTIAL_KEY);
        if (saved && (await this.trySignIn(saved))) return this.open();
        // A development server (no credential configured, on loopback) takes `owner` as the admin,
        // as the Firebase emulator does.
        if (await this.trySignIn("owner", { development: true })) return this.open();
        // A development server opened at a name other sites could point here refuses `owner` to pages.
        this.askForCredential(/browser page/.test(this.lastRefusal || "") ? this.lastRefusal : undefined);
    }

    async trySignIn(credential, { development = false } = {}) {
        try {
            const answer = await this.realtime.authenticate(credential);
            this.credential = credential;
            const auth = answer && answer.auth;
            this.identity = development
                ? "admin · development server"
                : auth && auth.uid
                  ? `uid ${auth.uid} · rules apply`
                  : "admin";
            if (!development) sessionStorage.setItem(CREDENTIAL_KEY, credential);
            return true;
        } catch (error) {
            this.lastRefusal = error.detail || error.message;
            return false;
        }
    }

    askForCredential(reason) {
        this.main.replaceChildren(el("p", { class: "muted centered", text: "Sign in to see the data." }));
        const input = el("input", {
            type: "password",
            name: "credential",
            autocomplete: "off",
            spellcheck: "false",
            "aria-label": "Credential",
        });
        dialog({
            title: "Sign in to the console",
            className: "sign-in",
            body: [
                reason ? el("p", { class: "error", text: reason }) : null,
                el("p", {
                    text: "This server asks for a credential. Enter its admin secret (--admin-secret) to see and change everything, or an ID token to browse as that user under the rules.",
                }),
                el("label", { class: "field" }, el("span", { text: "Admin secret or ID token" }), input),
                el("p", { class: "hint", text: "Kept for this tab only (sessionStorage), and sent as every client sends it." }),
            ],
            actions: [
                {
                    label: "Continue without",
                    name: "anonymous",
                    run: () => {
                        this.identity = "unauthenticated · rules apply";
                        this.credential = null;
                        return true;
                    },
                },
                {
                    label: "Sign in",
                    kind: "primary",
                    name: "sign-in",
                    run: async () => {
                        if (!input.value) throw new Error("Enter a credential");
                        if (!(await this.trySignIn(input.value))) throw new Error(`Refused: ${this.lastRefusal}`);
                    },
                },
            ],
        }).then((signedIn) => {
            if (signedIn) this.open();
            else this.askForCredential();
        });
    }

    authRevoked(status, reason) {
        sessionStorage.removeItem(CREDENTIAL_KEY);
        this.credential = null;
        this.askForCredential(`The credential is no longer accepted (${status}${reason ? `: ${reason}` : ""}).`);
    }

    signOut() {
        sessionStorage.removeItem(CREDENTIAL_KEY);
        location.reload();
    }

    /** Builds the page around the views once signed in. */
    open() {
        if (this.opened) {
            this.rest.credential = this.credential;
            this.identityLabel.textContent = this.identity;
            this.signOutButton.hidden = !sessionStorage.getItem(CREDENTIAL_KEY);
            this.dataView?.destroy();
            this.dataView = null;
            this.rulesView = null;
            return this.route();
        }
        this.opened = true;
        this.rest = new REST({ namespace: this.namespace || "", credential: this.credential });
        if (!this.namespace) this.rest.namespace = "";
        this.identityLabel.textContent = this.identity;
        this.signOutButton.hidden = !sessionStorage.getItem(CREDENTIAL_KEY);
        document.body.dataset.signedIn = "true";
        window.addEventListener("popstate", () => this.route());
        window.addEventListener("hashchange", () => this.route());
        setInterval(() => this.tickEvents(), 1000);
        this.route();
    }

    route() {
        const url = new URL(location.href);
        this.focus = keysOf(url);
        const tab = url.hash === "#rules" ? "rules" : OPS_VIEWS[url.hash.slice(1)] ? url.hash.slice(1) : "data";
        this.tab = tab;
        this.opsView?.destroy();
        this.opsView = null;
        for (const link of this.tabs.querySelectorAll("a")) {
            link.setAttribute("aria-current", link.dataset.tab === tab ? "page" : "false");
            link.href = this.urlFor(this.focus, link.dataset.tab);
        }
        if (OPS_VIEWS[tab]) {
            this.dataView?.destroy();
            this.dataView = null;
            this.opsView = new OPS_VIEWS[tab](this);
            this.main.replaceChildren(this.opsView.element);
            this.opsView.start();
            document.title = `${tab[0].toUpperCase()}${tab.slice(1)} · ${this.namespace || "default"} · Canopy`;
            return;
        }
        if (tab === "rules") {
            this.dataView?.destroy();
            this.dataView = null;
            if (!this.rulesView) this.rulesView = new RulesView(this);
            this.main.replaceChildren(this.rulesView.element);
            this.rulesView.load();
            document.title = `Rules · ${this.namespace || "default"} · Canopy`;
            return;
        }
        if (!this.dataView) this.dataView = new DataView(this);
        this.main.replaceChildren(this.dataView.element);
        this.dataView.show(this.focus);
        document.title = `${pathString(this.focus)} · ${this.namespace || "default"} · Canopy`;
    }

    navigate(keys) {
        history.pushState(null, "", this.urlFor(keys, "data"));
        this.route();
    }

    connectionState(state, detail) {
        if (state === "connected") this.setStatus("live", "Live");
        else if (state === "connecting") this.setStatus("connecting", "Connecting…");
        else if (state === "shutdown") this.setStatus("offline", `Server shut down${detail ? `: ${detail}` : ""}`);
        else if (state === "moved") this.moved(detail);
        else this.setStatus("offline", detail ? `Reconnecting… (${detail})` : "Reconnecting…");
    }

    /** A cluster's process that does not serve the namespace redirected the connection to `host`. */
    moved(host) {
        this.setStatus("offline", `Served at ${host}`);
        const path = "/" + this.focus.map(encodeURIComponent).join("/");
        const query = this.namespace ? `?ns=${encodeURIComponent(this.namespace)}` : "";
        const url = `${location.protocol}//${host}${path}${query}`;
        this.main.replaceChildren(
            el(
                "p",
                { class: "muted centered" },
                `Namespace ${this.namespace || "default"} is served by another process of the cluster: `,
                el("a", { href: url, text: host }),
                ".",
            ),
        );
    }

    setStatus(kind, text) {
        if (!this.statusLabel) return;
        this.statusDot.dataset.state = kind;
        this.statusLabel.textContent = text;
        this.connection = kind;
    }

    tickEvents() {
        const rate = this.events - this.eventsShown;
        this.eventsShown = this.events;
        document.body.dataset.events = String(this.events);
        if (this.connection === "live") this.statusLabel.textContent = rate > 0 ? `Live · ${rate.toLocaleString()} events/s` : "Live";
    }

    renderShell() {
        this.statusDot = el("span", { class: "status-dot", "data-state": "connecting" });
        this.statusLabel = el("span", { class: "status-text" });
        this.identityLabel = el("span", { class: "identity-text" });
        this.signOutButton = el("button", { type: "button", class: "link", text: "Sign out", hidden: true, onclick: () => this.signOut() });
        const namespaceInput = el("input", {
            class: "namespace-input",
            value: this.namespace || "",
            placeholder: "default",
            "aria-label": "Namespace",
            spellcheck: "false",
        });
        const namespaceForm = el("form", { class: "namespace" }, el("span", { class: "muted", text: "namespace" }), namespaceInput);
        namespaceForm.addEventListener("submit", (event) => {
            event.preventDefault();
            const name = namespaceInput.value.trim();
            location.href = name ? `/?ns=${encodeURIComponent(name)}` : "/";
        });
        this.namespacePicker = new NamespacePicker(this, namespaceForm);
        this.tabs = el(
            "nav",
            { class: "tabs", "aria-label": "Views" },
            el("a", { href: "#", "data-tab": "data", text: "Data" }),
            el("a", { href: "#rules", "data-tab": "rules", text: "Rules" }),
            el("a", { href: "#connections", "data-tab": "connections", text: "Connections" }),
            el("a", { href: "#load", "data-tab": "load", text: "Load" }),
        );
        for (const link of this.tabs.querySelectorAll("a")) {
            link.addEventListener("click", (event) => {
                if (event.metaKey || event.ctrlKey) return;
                event.preventDefault();
                history.pushState(null, "", this.urlFor(this.focus, link.dataset.tab));
                this.route();
            });
        }
        this.main = el("main", { class: "main" }, el("p", { class: "muted centered", text: "Connecting to the server…" }));
        this.root.replaceChildren(
            el(
                "header",
                { class: "topbar" },
                el("a", { class: "brand", href: "/" + (this.namespace ? `?ns=${encodeURIComponent(this.namespace)}` : "") }, el("span", { class: "logo" }), el("span", { text: "Canopy" })),
                namespaceForm,
                this.tabs,
                el("span", { class: "spacer" }),
                el("span", { class: "status" }, this.statusDot, this.statusLabel),
                el("span", { class: "identity" }, this.identityLabel, this.signOutButton),
            ),
            this.main,
        );
    }
}

window.addEventListener("unhandledrejection", (event) => {
    toast(`Unexpected error: ${event.reason?.message || event.reason}`, "error");
});

// The page's state, for the browser's console and for Tools/console-check.py.
window.__console = new Console();
window.__console.start();
