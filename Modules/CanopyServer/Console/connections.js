// The Connections view: the namespace's realtime connections, live (a snapshot from
// `/.console/api/connections` each second): who each acts as, where from, its SDK, listens,
// queued onDisconnect operations and what waits to be written; the namespace's owner in a cluster.

import { adminView, poll, refusalBlock, refusalText } from "./admin-api.js";
import { el } from "./dom.js";

const COLUMNS = [
    ["Session", "session"],
    ["Identity", "identity"],
    ["Address", "address"],
    ["SDK", "sdk"],
    ["Listens", "listens"],
    ["onDisconnect", "on-disconnect"],
    ["Waiting", "waiting"],
];

/** `sdk.js.10-14-1` as `js 10.14.1`; the user agent's first product otherwise. */
export function sdkLabel(row) {
    const sdk = /^sdk\.([^.]+)\.(.+)$/.exec(row.sdk || "");
    if (sdk) return `${sdk[1]} ${sdk[2].replace(/-/g, ".")}`;
    const browser = /(HeadlessChrome|Edg|Firefox|Chrome|Safari)\/(\d+)/.exec(row.userAgent || "");
    if (browser) return `browser · ${browser[1]} ${browser[2]}`;
    if (row.userAgent) return row.userAgent.split(" ")[0];
    return "—";
}

function identityLabel(row) {
    if (row.auth === "admin") return "admin";
    if (row.auth === "user") return row.uid === null || row.uid === undefined ? "signed in" : `uid ${row.uid}`;
    return "unauthenticated";
}

function bytesLabel(bytes) {
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export class ConnectionsView {
    /** app: {rest, namespace}. */
    constructor(app) {
        this.app = app;
        this.summary = el("span", { class: "muted", text: `namespace ${app.namespace || "default"}` });
        this.owner = el("div", { class: "ops-owner", hidden: true });
        this.status = el("div", { class: "ops-status", role: "status", text: "Loading…" });
        this.body = el("tbody");
        const head = el("tr", {}, COLUMNS.map(([label, name]) => el("th", { scope: "col", class: `col-${name}`, text: label })));
        this.table = el("table", { class: "ops-table connections-table" }, el("thead", {}, head), this.body);
        this.element = el(
            "section",
            { class: "view ops-view connections-view", "aria-label": "Connections" },
            el(
                "div",
                { class: "panel" },
                el("div", { class: "panel-header" }, el("h2", { text: "Connections" }), this.summary, el("span", { class: "spacer" }), el("span", { class: "hint", text: "live · every second" })),
                this.owner,
                (this.scroll = el("div", { class: "ops-scroll" }, this.table)),
                this.status,
            ),
        );
    }

    start() {
        this.poller?.stop();
        this.poller = poll(() => this.refresh());
    }

    destroy() {
        this.poller?.stop();
        this.poller = null;
    }

    async refresh() {
        let snapshot;
        try {
            snapshot = await adminView(this.app, "connections", { ns: this.app.namespace });
        } catch (error) {
            this.body.replaceChildren();
            this.owner.hidden = true;
            this.table.hidden = true;
            this.scroll.replaceChildren(this.table, refusalBlock(this.app, "The connections view", error));
            this.showError(refusalText("The connections view", error), error.status);
            // Signing in opens the view again; until then asking again each second changes nothing.
            if (error.status === 401 || error.status === 403) this.destroy();
            return;
        }
        if (this.table.hidden) {
            this.table.hidden = false;
            this.scroll.replaceChildren(this.table);
        }
        this.showOwner(snapshot);
        const rows = snapshot.connections || [];
        this.body.replaceChildren(...rows.map((row) => this.row(row)));
        this.element.dataset.count = String(rows.length);
        this.status.classList.remove("error");
        delete this.status.dataset.refused;
        this.status.textContent =
            snapshot.servedHere === false
                ? "This process does not serve the namespace: its connections are on its owner."
                : rows.length === 0
                  ? `No realtime connection to ${snapshot.namespace} (updated ${new Date().toLocaleTimeString()}).`
                  : `${rows.length} realtime connection${rows.length === 1 ? "" : "s"} (updated ${new Date().toLocaleTimeString()}).`;
        this.summary.textContent = `namespace ${snapshot.namespace}`;
    }

    showOwner(snapshot) {
        const owner = snapshot.owner;
        const servedBy = snapshot.servedBy;
        if (!owner && !servedBy && !snapshot.node) {
            this.owner.hidden = true;
            return;
        }
        this.owner.hidden = false;
        const parts = [];
        if (owner) parts.push(`Owner: node ${owner.node}${owner.host ? ` at ${owner.host}` : ""}, epoch ${owner.epoch}`);
        else if (servedBy) parts.push(`Served by node ${servedBy.node}${servedBy.host ? ` at ${servedBy.host}` : ""}`);
        else parts.push("Owner: not taken yet");
        if (snapshot.node) parts.push(`this process: ${snapshot.node}`);
        if (snapshot.ownerError) parts.push(`(owner unknown: ${snapshot.ownerError})`);
        this.owner.textContent = parts.join(" · ");
    }

    row(row) {
        const sdk = sdkLabel(row);
        const details = [row.userAgent, row.protocolVersion ? `protocol v${row.protocolVersion}` : null, row.origin ? `page ${row.origin}` : null].filter(Boolean).join(" · ");
        const waiting = row.queuedMessages > 0 ? `${bytesLabel(row.bytesWaiting)} + ${row.queuedMessages} queued` : bytesLabel(row.bytesWaiting);
        return el(
            "tr",
            { "data-session": row.id },
            el("td", { class: "col-session mono", title: row.id, text: row.id.slice(0, 12) }),
            el("td", { class: `col-identity identity-${row.auth}`, text: identityLabel(row) }),
            el("td", { class: "col-address mono", text: row.address }),
            el("td", { class: "col-sdk", title: details, text: sdk }),
            el("td", { class: "col-listens number", text: String(row.listens) }),
            el("td", { class: "col-on-disconnect number", title: `${row.onDisconnectBytes} bytes`, text: String(row.onDisconnect) }),
            el("td", { class: "col-waiting number", text: waiting }),
        );
    }

    showError(message, status) {
        this.status.textContent = message;
        this.status.classList.add("error");
        this.status.dataset.refused = String(status || "");
        this.element.dataset.count = "";
    }
}
