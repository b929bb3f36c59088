// The namespace picker: a list, beside the namespace box, of the namespaces the server holds (open
// in memory and in its store, from `/.console/api/namespaces`, admin only); choosing one opens it
// (`?ns=`). The box still opens any namespace by name.

import { adminView, refusalText } from "./admin-api.js";
import { el } from "./dom.js";

export class NamespacePicker {
    /** app: {rest, namespace}; form: the namespace box's form, which the picker's button joins. */
    constructor(app, form) {
        this.app = app;
        this.list = el("div", { class: "namespace-menu", role: "listbox", "aria-label": "Namespaces", hidden: true });
        this.button = el(
            "button",
            { type: "button", class: "namespace-toggle", title: "The namespaces on this server", "aria-label": "List the namespaces", "aria-haspopup": "listbox", "aria-expanded": "false", "data-action": "namespaces" },
            "▾",
        );
        this.button.addEventListener("click", () => (this.list.hidden ? this.open() : this.close()));
        document.addEventListener("click", (event) => {
            if (!this.list.hidden && !form.contains(event.target)) this.close();
        });
        document.addEventListener("keydown", (event) => {
            if (event.key === "Escape" && !this.list.hidden) this.close();
        });
        form.append(this.button, this.list);
    }

    async open() {
        this.list.hidden = false;
        this.button.setAttribute("aria-expanded", "true");
        this.list.replaceChildren(el("p", { class: "namespace-note", text: "Loading…" }));
        let answer;
        try {
            answer = await adminView(this.app, "namespaces");
        } catch (error) {
            this.list.replaceChildren(el("p", { class: "namespace-note error", "data-refused": String(error.status || ""), text: `${refusalText("The list of namespaces", error)} ${error.message}` }));
            return;
        }
        const current = this.app.namespace || answer.default;
        const items = (answer.namespaces || []).map((entry) => this.item(entry, entry.name === current, entry.name === answer.default));
        if (answer.error) items.push(el("p", { class: "namespace-note error", text: answer.error }));
        if (items.length === 0) items.push(el("p", { class: "namespace-note", text: "No namespace yet." }));
        this.list.replaceChildren(...items);
        this.list.querySelector("[aria-selected=true]")?.focus();
    }

    item(entry, selected, isDefault) {
        const badges = [];
        if (isDefault) badges.push("default");
        if (entry.open) badges.push("open");
        if (entry.stored) badges.push("stored");
        if (entry.owner) badges.push(`node ${entry.owner.node}`);
        const button = el(
            "button",
            { type: "button", role: "option", class: "namespace-item", "aria-selected": selected ? "true" : "false", "data-namespace": entry.name },
            el("span", { class: "namespace-name", text: entry.name }),
            el("span", { class: "namespace-badges", text: badges.join(" · ") }),
        );
        button.addEventListener("click", () => {
            const url = new URL(location.href);
            url.searchParams.set("ns", entry.name);
            location.href = `/${url.search}${url.hash}`;
        });
        return button;
    }

    close() {
        this.list.hidden = true;
        this.button.setAttribute("aria-expanded", "false");
    }
}
