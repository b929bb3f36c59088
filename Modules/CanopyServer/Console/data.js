// The Data view: the location bar (breadcrumb, editable), the query bar, the tree, and what a user
// does to a node: edit a leaf in place, add a child, rename, clone, delete, import and export.

import { dialog, el, iconButton, toast } from "./dom.js";
import { queryBar } from "./query.js";
import { exportNode } from "./rest.js";
import { Tree } from "./tree.js";
import {
    hasChildren,
    keyProblem,
    leafType,
    nodeValue,
    parsePath,
    pathString,
    priorityOf,
    pushID,
    setAt,
} from "./values.js";

export class DataView {
    /** app: {realtime, rest, namespace, navigate(keys)}. */
    constructor(app) {
        this.app = app;
        this.focus = [];
        this.query = null;
        this.tree = null;
        this.element = el("section", { class: "view data-view", "aria-label": "Data" });
    }

    /** Shows `focus` (keys), with the query bar's query when it stays at the same location. */
    show(focus) {
        const moved = pathString(focus) !== pathString(this.focus);
        this.focus = focus;
        if (moved) this.query = null;
        this.rebuild();
    }

    destroy() {
        this.tree?.destroy();
    }

    rebuild() {
        this.tree?.destroy();
        this.warning = el("div", { class: "banner warning", role: "status", hidden: true });
        this.problem = el("div", { class: "banner error", role: "alert", hidden: true });
        this.tree = new Tree({
            realtime: this.app.realtime,
            rest: this.app.rest,
            focus: this.focus,
            query: this.query,
            callbacks: {
                rowActions: (row, object) => this.rowActions(row, object),
                onLeafClick: (row, element) => this.editLeaf(row, element),
                onWarnings: (warnings) => this.showWarnings(warnings),
                onError: (message) => this.showProblem(message),
                onGrown: () => this.rebuild(),
                onMode: (mode) => (this.paging.hidden = mode !== "paged"),
                onSummary: (text) => (this.pagingSummary.textContent = text),
            },
        });
        this.queryOpen = this.queryOpen || this.query !== null;
        const bar = queryBar({
            initial: this.query,
            onRun: (query) => {
                this.query = query;
                if (!query) this.queryOpen = false;
                this.rebuild();
            },
        });
        bar.hidden = !this.queryOpen;
        this.paging = this.pagingBar();
        this.paging.hidden = true;
        const parts = [
            this.locationBar(bar),
            bar,
            this.query ? el("div", { class: "query-summary", text: `Query: ${this.query.description}` }) : null,
            this.warning,
            this.problem,
            this.paging,
            this.tree.element,
        ];
        this.element.replaceChildren(...parts.filter((part) => part));
        this.tree.start();
    }

    showWarnings(warnings) {
        if (!warnings.includes("no_index") || !this.query) return;
        const child = this.query.wire.i;
        this.warning.hidden = false;
        this.warning.replaceChildren(
            el("strong", { text: "No index: " }),
            `the rules declare no ".indexOn": "${child}" at ${pathString(this.focus)}. `,
            "Firebase refuses this query over REST and its SDKs warn; add ",
            el("code", { text: `".indexOn": ["${child}"]` }),
            ` to the rules at ${pathString(this.focus)}.`,
        );
    }

    showProblem(message) {
        this.problem.hidden = false;
        this.problem.textContent = message;
    }

    // The location bar.

    locationBar(bar) {
        const crumbs = el("nav", { class: "breadcrumb", "aria-label": "Location" });
        const namespace = this.app.namespace || "default";
        crumbs.append(
            el("a", {
                href: this.app.urlFor([]),
                class: "crumb root",
                text: namespace,
                title: `The root of namespace ${namespace}`,
                onclick: (event) => this.follow(event, []),
            }),
        );
        this.focus.forEach((key, index) => {
            crumbs.append(el("span", { class: "crumb-sep", text: "/" }));
            const keys = this.focus.slice(0, index + 1);
            crumbs.append(
                el("a", {
                    href: this.app.urlFor(keys),
                    class: "crumb",
                    text: key,
                    onclick: (event) => this.follow(event, keys),
                }),
            );
        });
        const input = el("input", {
            class: "path-input",
            value: pathString(this.focus),
            "aria-label": "Path",
            spellcheck: "false",
        });
        const form = el("form", { class: "path-form", hidden: true }, input);
        const editButton = iconButton("edit", "Edit the path", () => {
            crumbs.hidden = true;
            editButton.hidden = true;
            form.hidden = false;
            input.focus();
            input.select();
        }, { action: "edit-path", className: "subtle" });
        const closeEditor = () => {
            form.hidden = true;
            crumbs.hidden = false;
            editButton.hidden = false;
        };
        form.addEventListener("submit", (event) => {
            event.preventDefault();
            try {
                this.app.navigate(parsePath(input.value));
            } catch (error) {
                toast(`Not a path: ${error.message}`, "error");
            }
        });
        input.addEventListener("keydown", (event) => {
            if (event.key === "Escape") closeEditor();
        });
        input.addEventListener("blur", () => setTimeout(closeEditor, 150));
        crumbs.addEventListener("dblclick", () => editButton.click());
        const queryButton = iconButton("filter", "Query this location", () => {
            this.queryOpen = bar.hidden;
            bar.hidden = !bar.hidden;
            queryButton.classList.toggle("active", !bar.hidden);
        }, { text: "Query", action: "toggle-query" });
        queryButton.classList.toggle("active", this.queryOpen);
        const focusRow = { keys: this.focus, id: pathString(this.focus) };
        return el(
            "div",
            { class: "location-bar" },
            el("div", { class: "location" }, crumbs, editButton, form),
            el(
                "div",
                { class: "node-actions" },
                queryButton,
                iconButton("plus", "Add a child here", () => this.addChild(focusRow), { text: "Add child", action: "add-child-here" }),
                iconButton("upload", "Import JSON here", () => this.importAt(focusRow), { text: "Import", action: "import-here" }),
                iconButton("download", "Export this location as JSON", () => this.exportAt(focusRow), {
                    text: "Export",
                    action: "export-here",
                }),
                iconButton("remove", "Delete this location", () => this.remove(focusRow), {
                    action: "delete-here",
                    className: "danger-hover",
                }),
            ),
        );
    }

    follow(event, keys) {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        this.app.navigate(keys);
    }

    pagingBar() {
        const keyInput = el("input", { class: "jump-key", placeholder: "key", "aria-label": "Go to key", spellcheck: "false" });
        const form = el(
            "form",
            { class: "jump-form" },
            el("span", { class: "muted", text: "Go to key" }),
            keyInput,
        );
        form.addEventListener("submit", (event) => {
            event.preventDefault();
            this.tree.jump({ key: keyInput.value });
        });
        this.pagingSummary = el("span", { class: "paging-summary muted" });
        return el(
            "div",
            { class: "paging-bar" },
            iconButton("first", "First children", () => this.tree.jump({}), { text: "First", action: "first-page" }),
            iconButton("last", "Last children", () => this.tree.jump({ last: true }), { text: "Last", action: "last-page" }),
            form,
            el("span", { class: "spacer" }),
            this.pagingSummary,
        );
    }

    // Row actions.

    rowActions(row, object) {
        const actions = el("span", { class: "actions" });
        if (object) {
            actions.append(
                iconButton("plus", "Add child", () => this.addChild(row), { action: "add-child" }),
                iconButton("open", "Open here", () => this.app.navigate(row.keys), { action: "open" }),
            );
        }
        if (row.kind !== "self") {
            actions.append(
                iconButton("rename", "Rename", () => this.rename(row), { action: "rename" }),
                iconButton("clone", "Clone", () => this.clone(row), { action: "clone" }),
            );
        }
        actions.append(
            iconButton("upload", "Import JSON", () => this.importAt(row), { action: "import" }),
            iconButton("download", "Export JSON", () => this.exportAt(row), { action: "export" }),
            iconButton("remove", "Delete", () => this.remove(row), { action: "delete", className: "danger-hover" }),
        );
        return actions;
    }

    async write(promise, done) {
        try {
            await promise;
            if (done) toast(done);
        } catch (error) {
            toast(error.status === "permission_denied" ? "Permission denied" : `Refused: ${error.message}`, "error");
            throw error;
        }
    }

    /** Replaces the leaf's value with an editor: a type, the value, save and cancel. */
    editLeaf(row, element) {
        const current = this.tree.valueAt(row.keys);
        const value = nodeValue(current);
        if (hasChildren(value)) return;
        this.tree.editing = { id: row.id };
        const type = el("select", { class: "edit-type", "aria-label": "Type" });
        for (const name of ["string", "number", "boolean", "null"]) {
            type.append(el("option", { value: name, text: name, selected: name === leafType(value) }));
        }
        const text = el("input", {
            class: "edit-value",
            "aria-label": "Value",
            value: value === null || typeof value === "boolean" ? "" : String(value),
            spellcheck: "false",
        });
        const flag = el("select", { class: "edit-value", "aria-label": "Value" });
        for (const name of ["true", "false"]) flag.append(el("option", { value: name, text: name, selected: String(value) === name }));
        const slot = el("span", { class: "edit-slot" });
        const syncType = () => {
            slot.replaceChildren(type.value === "boolean" ? flag : type.value === "null" ? el("span", { class: "muted", text: "removes the value" }) : text);
        };
        type.addEventListener("change", () => {
            syncType();
            slot.querySelector("input, select")?.focus();
        });
        syncType();
        const finish = () => {
            this.tree.editing = null;
            element.signature = null;
            this.tree.scheduleFrame();
        };
        const save = async () => {
            let typed;
            switch (type.value) {
                case "string":
                    typed = text.value;
                    break;
                case "number":
                    typed = Number(text.value);
                    if (text.value.trim() === "" || !Number.isFinite(typed)) return toast(`Not a number: ${text.value}`, "error");
                    break;
                case "boolean":
                    typed = flag.value === "true";
                    break;
                default:
                    typed = null;
            }
            const priority = priorityOf(current);
            const written = priority !== null && typed !== null ? { ".value": typed, ".priority": priority } : typed;
            try {
                await this.write(this.app.realtime.put(pathString(row.keys), written));
                finish();
            } catch {
                // Told in a toast; the editor stays open.
            }
        };
        const form = el(
            "form",
            { class: "leaf-editor" },
            type,
            slot,
            iconButton("check", "Save", () => form.requestSubmit(), { action: "save-edit", className: "primary" }),
            iconButton("close", "Cancel", finish, { action: "cancel-edit" }),
        );
        form.addEventListener("submit", (event) => {
            event.preventDefault();
            save();
        });
        form.addEventListener("keydown", (event) => {
            if (event.key === "Escape") finish();
        });
        element.querySelector(".value")?.replaceWith(form);
        element.querySelector(".actions")?.remove();
        (slot.querySelector("input, select") || type).focus();
        slot.querySelector("input")?.select();
    }

    addChild(row) {
        const parent = pathString(row.keys);
        const key = el("input", { name: "key", value: pushID(this.app.realtime.serverNow()), spellcheck: "false" });
        const type = el("select", { name: "type" });
        for (const name of ["string", "number", "boolean", "json"]) type.append(el("option", { value: name, text: name === "json" ? "JSON" : name }));
        const value = el("textarea", { name: "value", rows: "3", spellcheck: "false", placeholder: "value" });
        return dialog({
            title: `Add a child to ${parent}`,
            body: [
                el("label", { class: "field" }, el("span", { text: "Key" }), key),
                el("label", { class: "field" }, el("span", { text: "Type" }), type),
                el("label", { class: "field" }, el("span", { text: "Value" }), value),
                el("p", { class: "hint", text: "The key is a new push id, as push() makes it; any key will do." }),
            ],
            actions: [
                { label: "Cancel" },
                {
                    label: "Add",
                    kind: "primary",
                    name: "add",
                    run: async () => {
                        const problem = keyProblem(key.value);
                        if (problem) throw new Error(problem);
                        const typed = parseTyped(type.value, value.value);
                        await this.write(this.app.realtime.put(pathString(row.keys.concat(key.value)), typed));
                        if (row.keys.length > this.focus.length) this.tree.expanded.add(pathString(row.keys));
                    },
                },
            ],
        });
    }

    remove(row) {
        const path = pathString(row.keys);
        return dialog({
            title: `Delete ${path}?`,
            body: el("p", { text: `${path} and everything below it will be removed.` }),
            actions: [
                { label: "Cancel" },
                {
                    label: "Delete",
                    kind: "danger",
                    name: "confirm-delete",
                    run: () => this.write(this.app.realtime.put(path, null)),
                },
            ],
        });
    }

    /** Rename and clone: the value written at a new key (and, to rename, the old one deleted) in one update. */
    moveOrCopy(row, rename) {
        const oldKey = row.keys[row.keys.length - 1];
        const parent = row.keys.slice(0, -1);
        const key = el("input", { name: "key", value: rename ? oldKey : `${oldKey}_copy`, spellcheck: "false" });
        return dialog({
            title: `${rename ? "Rename" : "Clone"} ${pathString(row.keys)}`,
            body: [
                el("label", { class: "field" }, el("span", { text: "New key" }), key),
                el("p", {
                    class: "hint",
                    text: rename
                        ? "The value is written at the new key and removed from the old one, in one multi-path update."
                        : "The value is copied to the new key, beside the original.",
                }),
            ],
            actions: [
                { label: "Cancel" },
                {
                    label: rename ? "Rename" : "Clone",
                    kind: "primary",
                    name: rename ? "rename" : "clone",
                    run: async () => {
                        const problem = keyProblem(key.value);
                        if (problem) throw new Error(problem);
                        if (key.value === oldKey) throw new Error("Choose another key");
                        const value = this.tree.valueAt(row.keys);
                        if (value === undefined) throw new Error("The value is no longer there");
                        const update = { [key.value]: value };
                        if (rename) update[oldKey] = null;
                        await this.write(this.app.realtime.merge(pathString(parent), update));
                    },
                },
            ],
        });
    }

    rename(row) {
        return this.moveOrCopy(row, true);
    }

    clone(row) {
        return this.moveOrCopy(row, false);
    }

    exportAt(row) {
        const name = row.keys.length === 0 ? this.app.namespace || "default" : row.keys[row.keys.length - 1];
        exportNode(this.app.rest, row.keys, `${name}.json`, (status, message) => {
            if (status === 200) toast(`Exporting ${pathString(row.keys)} to ${name}.json`);
            else if (status !== 0) toast(`Export refused (${status}): ${message}`, "error");
        });
    }

    importAt(row) {
        const path = pathString(row.keys);
        const file = el("input", { type: "file", name: "file", accept: ".json,application/json" });
        const progress = el("progress", { max: "1", value: "0", class: "import-progress" });
        const detail = el("span", { class: "progress-text muted", text: "" });
        return dialog({
            title: `Import JSON at ${path}`,
            className: "import-dialog",
            body: [
                el("p", { text: `The file's content replaces the data at ${path} and everything below it.` }),
                el("label", { class: "field" }, el("span", { text: "File" }), file),
                el("div", { class: "progress-line" }, progress, detail),
            ],
            actions: [
                { label: "Cancel" },
                {
                    label: "Import",
                    kind: "primary",
                    name: "import",
                    run: async ({ say }) => {
                        const chosen = file.files[0];
                        if (!chosen) throw new Error("Choose a file");
                        const started = performance.now();
                        const report = (sent, total) => {
                            progress.max = total;
                            progress.value = sent;
                            const percent = total ? Math.round((100 * sent) / total) : 0;
                            detail.textContent = `${percent} % · ${formatBytes(sent)} of ${formatBytes(total)}`;
                        };
                        await importFile(this.app.rest, row.keys, chosen, report, say);
                        const seconds = ((performance.now() - started) / 1000).toFixed(1);
                        toast(`Imported ${formatBytes(chosen.size)} at ${path} in ${seconds} s`);
                    },
                },
            ],
        });
    }
}

function parseTyped(type, text) {
    switch (type) {
        case "number": {
            const number = Number(text);
            if (text.trim() === "" || !Number.isFinite(number)) throw new Error(`Not a number: ${text}`);
            return number;
        }
        case "boolean":
            if (text.trim() !== "true" && text.trim() !== "false") throw new Error("A boolean is true or false");
            return text.trim() === "true";
        case "json":
            try {
                return JSON.parse(text);
            } catch (error) {
                throw new Error(`Not JSON: ${error.message}`);
            }
        default:
            return text;
    }
}

function formatBytes(bytes) {
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Imports `file` at `keys`: one PUT of the file as it is, streamed with progress; if the server
 * refuses it as too large (413, "exceeds N bytes"), the document in parts under its limit (a PUT of
 * the first, PATCHes of the rest; not atomic).
 */
async function importFile(rest, keys, file, report, say) {
    try {
        await rest.upload("PUT", keys, file, report);
        report(file.size, file.size);
        return;
    } catch (error) {
        if (error.status !== 413) throw error;
        const limit = Number((/(\d+) bytes/.exec(error.message) || [])[1]);
        if (!limit) throw error;
        say(`The file is over the server's ${formatBytes(limit)} request limit: importing it in parts.`);
        return importInParts(rest, keys, file, Math.floor(limit / 2), report);
    }
}

async function importInParts(rest, keys, file, budget, report) {
    let document;
    try {
        document = JSON.parse(await file.text());
    } catch (error) {
        throw new Error(`The file is not JSON: ${error.message}`);
    }
    const batches = [];
    let batch = {};
    let size = 0;
    const add = (relative, text, value) => {
        if (size > 0 && size + text.length > budget) {
            batches.push(batch);
            batch = {};
            size = 0;
        }
        batch[relative.join("/")] = value;
        size += text.length + relative.join("/").length + 4;
    };
    const walk = (value, relative) => {
        const text = JSON.stringify(value);
        if (text.length <= budget || !value || typeof value !== "object") {
            if (text.length > budget) throw new Error(`The value at ${pathString(relative)} alone is over the request limit`);
            add(relative, text, value);
            return;
        }
        for (const [key, child] of Object.entries(value)) walk(child, relative.concat(key));
    };
    walk(document, []);
    if (size > 0) batches.push(batch);
    const total = batches.reduce((sum, part) => sum + JSON.stringify(part).length, 0);
    let sent = 0;
    for (const [index, part] of batches.entries()) {
        let body;
        let method = "PATCH";
        if (index === 0) {
            method = "PUT";
            let nested = null;
            for (const [path, value] of Object.entries(part)) {
                nested = setAt(nested, path.split("/").filter((key) => key), value);
            }
            body = JSON.stringify(path0(part) ?? nested);
        } else {
            body = JSON.stringify(part);
        }
        const length = body.length;
        await rest.upload(method, keys, body, (done) => report(sent + done, total));
        sent += length;
        report(sent, total);
    }
}

/** The value of a part that holds the whole document (its one path is the location itself). */
function path0(part) {
    return Object.prototype.hasOwnProperty.call(part, "") ? part[""] : undefined;
}
