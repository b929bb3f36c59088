// The Data view's tree: the children of the location shown, a page at a time, in a windowed list
// whose DOM and memory stay bounded however many children there are; every loaded page live through
// one listen on the page's connection; changes coalesced per animation frame and flashed.

import { el } from "./dom.js";
import {
    childAt,
    childKeys,
    compareKeys,
    entryComparator,
    hasChildren,
    isPrefix,
    leafText,
    leafType,
    nodeValue,
    pathString,
    priorityOf,
    sameValue,
    setAt,
} from "./values.js";

export const ROW_HEIGHT = 30;
const PAGE_SIZE = 50;
const MAX_PAGES = 6;
const OVERSCAN = 12;
const PREFETCH_ROWS = 30;
const NESTED_STEP = 100;
const WHOLE_LIMIT = PAGE_SIZE * 4;
const GHOST_MS = 1000;

/** The id of a row: its absolute path. */
function rowID(keys) {
    return pathString(keys);
}

/**
 * A node list for `focus` (an array of keys). Callbacks: rowActions(row) builds a row's action
 * buttons, onLeafClick(row, element) starts an edit, onWarnings(warnings), onError(message),
 * onState(state) whenever loading starts or ends.
 */
export class Tree {
    constructor({ realtime, rest, focus, query, callbacks }) {
        this.realtime = realtime;
        this.rest = rest;
        this.focus = focus;
        this.query = query;
        this.callbacks = callbacks;
        this.pages = [];
        this.mode = "loading";
        this.rows = [];
        this.rowIndex = new Map();
        this.elements = new Map();
        this.expanded = new Set();
        this.nestedShown = new Map();
        this.ghosts = new Map();
        this.hits = new Map();
        this.editing = null;
        this.frameRequested = false;
        this.loading = null;
        this.destroyed = false;
        this.started = performance.now();
        this.comparator = entryComparator(query ? query.ordering : null);
        this.sortCache = new WeakMap();

        this.canvas = el("div", { class: "tree-canvas", role: "tree" });
        this.scroller = el("div", { class: "tree", tabindex: "0", "data-state": "loading" }, this.canvas);
        this.scroller.addEventListener("scroll", () => this.scheduleFrame(), { passive: true });
        this.resizeObserver = new ResizeObserver(() => this.scheduleFrame());
        this.resizeObserver.observe(this.scroller);
        this.element = this.scroller;
    }

    /** Starts loading; the element shows the first rows as soon as they arrive. */
    async start() {
        try {
            if (this.query) return this.startQuery();
            const keys = await this.pageKeys(null, "first");
            if (this.destroyed) return;
            if (keys === null || keys.length < PAGE_SIZE) return this.startWhole();
            this.mode = "paged";
            this.addPage({ start: null, end: { key: keys[keys.length - 1], inclusive: true }, keys }, "end");
        } catch (error) {
            this.fail(error);
        }
    }

    destroy() {
        this.destroyed = true;
        for (const page of this.pages) page.stop?.();
        this.pages = [];
        this.resizeObserver.disconnect();
    }

    fail(error) {
        this.scroller.dataset.state = "error";
        this.callbacks.onError(error.message || String(error));
    }

    // Loading.

    /**
     * The keys of the page next to `bound` (null: the first or last page), ordered by key, fetched
     * with REST (shallow, so without the children's values); null for a leaf or no data.
     */
    async pageKeys(bound, direction) {
        const parameters = { orderBy: '"$key"', shallow: "true" };
        if (direction === "last" || direction === "before") parameters.limitToLast = String(PAGE_SIZE);
        else parameters.limitToFirst = String(PAGE_SIZE);
        if (bound && direction === "after") {
            parameters[bound.inclusive ? "startAt" : "startAfter"] = JSON.stringify(bound.key);
        } else if (bound && direction === "before") {
            parameters[bound.inclusive ? "endAt" : "endBefore"] = JSON.stringify(bound.key);
        } else if (direction === "at") {
            parameters.startAt = JSON.stringify(bound.key);
        }
        const answer = await this.rest.get(this.focus, parameters);
        if (answer === null || typeof answer !== "object") return answer === null ? null : [];
        return Object.keys(answer).sort(compareKeys);
    }

    /** A node with few children (or a leaf, or nothing): one plain listen for all of it. */
    startWhole() {
        this.mode = "whole";
        this.addPage({ start: null, end: null, keys: [] }, "end", null);
    }

    startQuery() {
        this.mode = "query";
        this.addPage({ start: null, end: null, keys: [] }, "end", this.query.wire);
    }

    /** Adds a page at the "start" or "end" of the loaded ones and listens to it. */
    addPage({ start, end, keys }, side, query = keyRangeQuery(start, end)) {
        const page = {
            start,
            end,
            keys,
            data: undefined,
            base: undefined,
            touched: new Map(),
            loaded: false,
            query,
            stop: null,
        };
        if (side === "start") this.pages.unshift(page);
        else this.pages.push(page);
        const path = pathString(this.focus);
        page.stop = this.realtime.listen(path, query, {
            onData: (op) => this.receive(page, op),
            onAnswer: (warnings) => this.callbacks.onWarnings(warnings),
            onError: (error) => {
                if (error.status === "replaced") return;
                this.callbacks.onError(
                    error.status === "permission_denied"
                        ? `You may not read ${path} (permission denied)`
                        : `Listening to ${path} failed: ${error.message}`,
                );
            },
        });
        this.scheduleFrame();
        return page;
    }

    dropPage(page) {
        page.stop?.();
        this.pages = this.pages.filter((other) => other !== page);
    }

    get atStart() {
        return this.mode !== "paged" || (this.pages.length > 0 && this.pages[0].start === null);
    }

    get atEnd() {
        return this.mode !== "paged" || (this.pages.length > 0 && this.pages[this.pages.length - 1].end === null);
    }

    /** Loads the page after the last (or before the first) loaded one. */
    async loadMore(side) {
        if (this.loading || this.mode !== "paged") return;
        const edge = side === "end" ? this.pages[this.pages.length - 1] : this.pages[0];
        const bound = side === "end" ? edge.end : edge.start;
        if (!bound) return;
        const other = { key: bound.key, inclusive: !bound.inclusive };
        this.loading = side;
        try {
            const keys = await this.pageKeys(other, side === "end" ? "after" : "before");
            if (this.destroyed || !this.pages.includes(edge)) return;
            const found = keys || [];
            if (side === "end") {
                const end = found.length < PAGE_SIZE ? null : { key: found[found.length - 1], inclusive: true };
                this.addPage({ start: other, end, keys: found }, "end");
                if (this.pages.length > MAX_PAGES) this.dropPage(this.pages[0]);
            } else {
                const start = found.length < PAGE_SIZE ? null : { key: found[0], inclusive: true };
                this.addPage({ start, end: other, keys: found }, "start");
                if (this.pages.length > MAX_PAGES) this.dropPage(this.pages[this.pages.length - 1]);
            }
        } catch (error) {
            this.callbacks.onError(`Loading more children failed: ${error.message}`);
        } finally {
            this.loading = null;
            this.scheduleFrame();
        }
    }

    /** Shows the children from `key` on (null: the first page), or the last page. */
    async jump(where) {
        if (this.mode !== "paged") return;
        try {
            let keys;
            let start = null;
            let end = null;
            if (where.last) {
                keys = (await this.pageKeys(null, "last")) || [];
                start = keys.length < PAGE_SIZE ? null : { key: keys[0], inclusive: true };
            } else if (where.key !== undefined) {
                keys = (await this.pageKeys({ key: where.key }, "at")) || [];
                start = { key: where.key, inclusive: true };
                end = keys.length < PAGE_SIZE ? null : { key: keys[keys.length - 1], inclusive: true };
            } else {
                keys = (await this.pageKeys(null, "first")) || [];
                end = keys.length < PAGE_SIZE ? null : { key: keys[keys.length - 1], inclusive: true };
            }
            for (const page of this.pages) page.stop?.();
            this.pages = [];
            this.addPage({ start, end, keys }, "end");
            this.scroller.scrollTop = where.last ? this.scroller.scrollHeight : 0;
            this.anchor = null;
            this.jumped = where.last ? "end" : "start";
        } catch (error) {
            this.callbacks.onError(`Jumping failed: ${error.message}`);
        }
    }

    // Live data.

    receive(page, op) {
        if (!this.pages.includes(page)) return;
        const at = op.path.split("/").filter((key) => key);
        if (!isPrefix(this.focus, at)) return;
        const relative = at.slice(this.focus.length);
        if (page.loaded && page.base === undefined) page.base = page.data === undefined ? null : page.data;
        let data = page.data === undefined ? null : page.data;
        const touch = (keys) => {
            if (!page.loaded) return;
            const id = keys.join("/");
            const entry = page.touched.get(id);
            if (entry) entry.count++;
            else page.touched.set(id, { relative: keys, count: 1 });
        };
        if (op.kind === "d") {
            data = setAt(data, relative, op.data);
            touch(relative);
        } else {
            for (const [member, value] of Object.entries(op.data || {})) {
                const keys = relative.concat(member.split("/").filter((key) => key));
                data = setAt(data, keys, value);
                touch(keys);
            }
        }
        page.data = data;
        if (!page.loaded) {
            page.loaded = true;
            page.keys = null;
        }
        this.scheduleFrame();
    }

    /** The value at `keys` (absolute) in what the pages hold; undefined when not loaded. */
    valueAt(keys) {
        if (!isPrefix(this.focus, keys)) return undefined;
        const relative = keys.slice(this.focus.length);
        for (const page of this.pages) {
            if (!page.loaded) continue;
            const value = childAt(page.data, relative);
            if (value !== undefined) return value;
        }
        return undefined;
    }

    /** The focus node's own value when shown whole (a leaf, or few children); undefined otherwise. */
    get wholeValue() {
        if (this.mode !== "whole" || !this.pages[0]?.loaded) return undefined;
        return this.pages[0].data;
    }

    // Rows.

    sortedEntries(value, comparator = (a, b) => compareKeys(a[0], b[0])) {
        let entries = this.sortCache.get(value);
        if (!entries) {
            entries = childKeys(value).map((key) => [key, value[key]]);
            entries.sort(comparator);
            this.sortCache.set(value, entries);
        }
        return entries;
    }

    /** The rows of everything loaded, depth first, in order. */
    flatten() {
        const rows = [];
        if (!this.atStart) rows.push({ id: "#above", kind: "edge", side: "start" });
        const now = performance.now();
        for (const [id, ghost] of this.ghosts) if (ghost.until < now) this.ghosts.delete(id);
        for (const page of this.pages) {
            if (!page.loaded) {
                for (const key of page.keys || []) {
                    rows.push({ id: rowID(this.focus.concat(key)), kind: "pending", keys: this.focus.concat(key), depth: 0 });
                }
                continue;
            }
            if (!hasChildren(page.data)) continue;
            this.pushChildren(rows, this.focus, page.data, 0, this.comparator);
        }
        if (this.mode !== "paged" && this.pages[0]?.loaded && !hasChildren(this.pages[0].data)) {
            const value = this.pages[0].data;
            if (value !== null && this.mode === "whole") {
                rows.push({ id: rowID(this.focus), kind: "self", keys: this.focus, depth: 0, value });
            } else {
                rows.push({ id: "#empty", kind: "empty", query: this.mode === "query" });
            }
        }
        if (!this.atEnd) rows.push({ id: "#below", kind: "edge", side: "end" });
        this.rows = rows;
        this.rowIndex = new Map(rows.map((row, index) => [row.id, index]));
    }

    pushChildren(rows, parentKeys, value, depth, comparator) {
        const parentID = rowID(parentKeys);
        let entries = this.sortedEntries(value, depth === 0 ? comparator : undefined);
        const ghosts = [...this.ghosts.values()].filter((ghost) => ghost.parent === parentID && value[ghost.key] === undefined);
        if (ghosts.length > 0) {
            entries = entries.concat(ghosts.map((ghost) => [ghost.key, ghost.value, true]));
            entries.sort(depth === 0 ? comparator : (a, b) => compareKeys(a[0], b[0]));
        }
        const limit = depth === 0 ? Infinity : this.nestedShown.get(parentID) || NESTED_STEP;
        let shown = 0;
        for (const [key, child, ghost] of entries) {
            if (shown >= limit) {
                rows.push({
                    id: `${parentID}#more`,
                    kind: "more",
                    keys: parentKeys,
                    depth,
                    shown,
                    total: entries.length,
                });
                break;
            }
            shown++;
            const keys = parentKeys.concat(key);
            const id = rowID(keys);
            rows.push({ id, kind: ghost ? "ghost" : "node", keys, depth, value: child });
            if (!ghost && this.expanded.has(id) && hasChildren(child)) this.pushChildren(rows, keys, child, depth + 1);
        }
    }

    toggle(row) {
        if (this.expanded.has(row.id)) this.expanded.delete(row.id);
        else this.expanded.add(row.id);
        this.scheduleFrame();
    }

    showMore(row) {
        const id = rowID(row.keys);
        this.nestedShown.set(id, (this.nestedShown.get(id) || NESTED_STEP) + NESTED_STEP);
        this.scheduleFrame();
    }

    // Frames.

    scheduleFrame() {
        if (this.frameRequested || this.destroyed) return;
        this.frameRequested = true;
        requestAnimationFrame(() => {
            this.frameRequested = false;
            if (!this.destroyed) this.frame();
        });
    }

    /** The first row in view and where it sits, so that rows added or removed above do not move it. */
    captureAnchor() {
        const top = this.scroller.scrollTop;
        let index = Math.max(0, Math.floor(top / ROW_HEIGHT));
        // Not the edge rows: they stay first and last whatever is loaded.
        while (index < this.rows.length && !this.rows[index].keys) index++;
        if (index >= this.rows.length) return null;
        return { id: this.rows[index].id, offset: index * ROW_HEIGHT - top };
    }

    frame() {
        this.framesDrawn = (this.framesDrawn || 0) + 1;
        const anchor = this.jumped ? null : this.captureAnchor();
        const oldRows = this.rows;
        this.flatten();
        const flashes = this.changes(oldRows);
        this.canvas.style.height = `${this.rows.length * ROW_HEIGHT}px`;
        if (this.jumped) {
            this.scroller.scrollTop = this.jumped === "end" ? this.rows.length * ROW_HEIGHT : 0;
            if (this.pages.every((page) => page.loaded)) this.jumped = null;
        } else if (anchor && this.rowIndex.has(anchor.id)) {
            const wanted = this.rowIndex.get(anchor.id) * ROW_HEIGHT - anchor.offset;
            if (Math.abs(this.scroller.scrollTop - wanted) >= 1) this.scroller.scrollTop = wanted;
        }
        this.render(flashes);
        this.afterRender();
    }

    /**
     * What changed since the last frame, per row: "added", "changed" or "removed" (removed rows stay
     * a moment as ghosts). Counts each change against the rows it touched.
     */
    changes(oldRows) {
        const flashes = new Map();
        const now = performance.now();
        const mark = (id, kind) => {
            const rank = { changed: 1, added: 2, removed: 3 };
            if (!flashes.has(id) || rank[kind] > rank[flashes.get(id)]) flashes.set(id, kind);
        };
        const oldIndex = new Map(oldRows.map((row, index) => [row.id, index]));
        for (const page of this.pages) {
            if (page.base === undefined) continue;
            const base = page.base;
            const touched = page.touched;
            page.base = undefined;
            page.touched = new Map();
            // Each location once per frame, however many changes it had (counted).
            for (const { relative, count } of touched.values()) {
                const keys = this.focus.concat(relative);
                for (let length = this.focus.length + 1; length <= keys.length; length++) {
                    const id = rowID(keys.slice(0, length));
                    if (!this.rowIndex.has(id) && !oldIndex.has(id)) continue;
                    this.hit(id, now, count);
                    if (length < keys.length) {
                        mark(id, "changed");
                        continue;
                    }
                    const before = childAt(base, relative);
                    const after = childAt(page.data, relative);
                    if (before === undefined && after !== undefined) mark(id, "added");
                    else if (after === undefined && before !== undefined) {
                        if (oldIndex.has(id)) this.addGhost(keys, before, now);
                        mark(id, "removed");
                    } else if (!sameValue(before, after)) mark(id, "changed");
                }
                this.compareBelow(keys, base, page.data, oldRows, oldIndex, now, mark);
            }
        }
        if (flashes.size > 0 && [...flashes.values()].includes("removed")) {
            this.flatten();
            setTimeout(() => this.scheduleFrame(), GHOST_MS + 50);
        }
        return flashes;
    }

    /** Flashes the rows shown below `keys` whose value changed, and keeps the ones removed as ghosts. */
    compareBelow(keys, base, data, oldRows, oldIndex, now, mark) {
        const id = rowID(keys);
        const start = keys.length === this.focus.length ? 0 : this.rowIndex.get(id);
        if (start !== undefined) {
            for (let index = start; index < this.rows.length; index++) {
                const row = this.rows[index];
                if (row.kind !== "node" || !row.keys) continue;
                if (row.keys.length <= keys.length) {
                    if (index > start) break;
                    continue;
                }
                if (!isPrefix(keys, row.keys)) break;
                const relative = row.keys.slice(this.focus.length);
                const before = childAt(base, relative);
                if (before === undefined) mark(row.id, "added");
                else if (!sameValue(before, row.value)) mark(row.id, "changed");
            }
        }
        const oldStart = keys.length === this.focus.length ? 0 : oldIndex.get(id);
        if (oldStart === undefined) return;
        for (let index = oldStart; index < oldRows.length; index++) {
            const row = oldRows[index];
            if (row.kind !== "node" || !row.keys || row.keys.length <= keys.length) continue;
            if (!isPrefix(keys, row.keys)) break;
            if (this.rowIndex.has(row.id)) continue;
            const relative = row.keys.slice(this.focus.length);
            if (childAt(data, relative) !== undefined) continue;
            // Below a removed parent, only the parent shows the removal.
            const parent = row.keys.slice(0, -1);
            if (parent.length > this.focus.length && !this.rowIndex.has(rowID(parent))) continue;
            this.addGhost(row.keys, row.value, now);
            mark(row.id, "removed");
        }
    }

    addGhost(keys, value, now) {
        this.ghosts.set(rowID(keys), {
            parent: rowID(keys.slice(0, -1)),
            key: keys[keys.length - 1],
            value,
            until: now + GHOST_MS,
        });
    }

    /** Counts `count` changes against row `id`, in ten slots of 100 ms (the last second). */
    hit(id, now, count = 1) {
        const slot = Math.floor(now / 100);
        let entry = this.hits.get(id);
        if (!entry) {
            entry = { slot, counts: new Array(10).fill(0) };
            this.hits.set(id, entry);
        }
        advance(entry, slot);
        entry.counts[slot % 10] += count;
    }

    /** How many changes touched row `id` in the last second. */
    rate(id, now) {
        const entry = this.hits.get(id);
        if (!entry) return 0;
        advance(entry, Math.floor(now / 100));
        const total = entry.counts.reduce((sum, count) => sum + count, 0);
        if (total === 0) this.hits.delete(id);
        return total;
    }

    // Rendering.

    render(flashes) {
        const top = this.scroller.scrollTop;
        const height = this.scroller.clientHeight || 600;
        const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
        const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
        const now = performance.now();
        const keep = new Set();
        for (let index = first; index < last; index++) {
            const row = this.rows[index];
            keep.add(row.id);
            let element = this.elements.get(row.id);
            if (!element) {
                element = el("div", { class: "row" });
                this.elements.set(row.id, element);
                this.canvas.append(element);
            }
            element.style.transform = `translateY(${index * ROW_HEIGHT}px)`;
            if (this.editing?.id !== row.id) this.fill(element, row, now);
            const flash = flashes.get(row.id);
            if (flash) {
                const previous = element.dataset.flash || "";
                element.dataset.flash = `${flash}-${previous.endsWith("-a") ? "b" : "a"}`;
            }
        }
        for (const [id, element] of this.elements) {
            if (keep.has(id) || this.editing?.id === id) continue;
            element.remove();
            this.elements.delete(id);
        }
        for (const [id] of this.hits) if (!keep.has(id)) this.rate(id, now);
    }

    fill(element, row, now) {
        const expanded = this.expanded.has(row.id);
        const rate = row.kind === "node" || row.kind === "self" ? this.rate(row.id, now) : 0;
        const signature = [row.kind, row.value, expanded, rate, row.shown, row.total];
        const previous = element.signature;
        if (previous && previous.every((part, index) => part === signature[index])) return;
        element.signature = signature;
        element.replaceChildren();
        element.className = `row ${row.kind}`;
        element.dataset.kind = row.kind;
        if (row.keys) element.dataset.path = row.id;
        else delete element.dataset.path;
        element.style.paddingLeft = `${12 + (row.depth || 0) * 20}px`;
        switch (row.kind) {
            case "edge":
                element.append(
                    el("span", {
                        class: "edge-text",
                        text: this.loading === row.side ? "Loading…" : row.side === "start" ? "Earlier children" : "More children",
                    }),
                );
                element.removeAttribute("role");
                return;
            case "more":
                element.append(
                    el("button", {
                        type: "button",
                        class: "link",
                        text: `Show ${Math.min(NESTED_STEP, row.total - row.shown)} more (${row.shown.toLocaleString()} of ${row.total.toLocaleString()} shown)`,
                        onclick: () => this.showMore(row),
                    }),
                );
                return;
            case "empty":
                element.append(
                    el("span", {
                        class: "empty-text",
                        text: row.query
                            ? "No children match this query."
                            : `No data at ${pathString(this.focus)}. Add a child or import JSON here.`,
                    }),
                );
                return;
            case "pending":
                element.append(
                    el("span", { class: "toggle-space" }),
                    el("span", { class: "key", text: row.keys[row.keys.length - 1] }),
                    el("span", { class: "value pending", text: "…" }),
                );
                return;
            default:
                break;
        }
        element.setAttribute("role", "treeitem");
        element.setAttribute("aria-level", String((row.depth || 0) + 1));
        const value = nodeValue(row.value);
        const object = hasChildren(row.value);
        const key = row.kind === "self" ? row.keys[row.keys.length - 1] || "/" : row.keys[row.keys.length - 1];
        if (object) {
            element.setAttribute("aria-expanded", String(expanded));
            element.append(
                el("button", {
                    type: "button",
                    class: `toggle ${expanded ? "open" : ""}`,
                    "aria-label": expanded ? "Collapse" : "Expand",
                    onclick: () => this.toggle(row),
                }),
            );
        } else {
            element.removeAttribute("aria-expanded");
            element.append(el("span", { class: "toggle-space" }));
        }
        element.append(
            el("span", {
                class: "key",
                text: key,
                title: key,
                onclick: object ? () => this.toggle(row) : undefined,
            }),
        );
        if (object) {
            const count = childKeys(row.value).length;
            element.append(el("span", { class: "count", text: `${count.toLocaleString()} ${count === 1 ? "child" : "children"}` }));
        } else {
            element.append(
                el("span", { class: "sep", text: ":" }),
                el("span", {
                    class: `value ${leafType(value)}`,
                    text: leafText(value),
                    title: row.kind === "ghost" ? "removed" : "Click to edit",
                    tabindex: row.kind === "ghost" ? undefined : "0",
                    onclick: row.kind === "ghost" ? undefined : () => this.callbacks.onLeafClick(row, element),
                    onkeydown: (event) => {
                        if (event.key === "Enter" && row.kind !== "ghost") this.callbacks.onLeafClick(row, element);
                    },
                }),
            );
        }
        const priority = priorityOf(row.value);
        if (priority !== null) element.append(el("span", { class: "priority", text: `priority ${leafText(priority)}` }));
        if (rate > 1) {
            element.append(
                el("span", {
                    class: "rate",
                    text: `${rate.toLocaleString()}/s`,
                    title: `${rate.toLocaleString()} changes in the last second, drawn once per frame`,
                }),
            );
        }
        if (row.kind !== "ghost") element.append(this.callbacks.rowActions(row, object));
    }

    /** Loads pages as the view nears the loaded ones' ends; tells the page's state for tests. */
    afterRender() {
        const top = this.scroller.scrollTop;
        const height = this.scroller.clientHeight || 600;
        const firstVisible = Math.floor(top / ROW_HEIGHT);
        const lastVisible = Math.ceil((top + height) / ROW_HEIGHT);
        const ready = this.pages.length > 0 && this.pages.every((page) => page.loaded);
        if (ready && !this.loading && !this.jumped) {
            if (!this.atEnd && lastVisible > this.rows.length - PREFETCH_ROWS) this.loadMore("end");
            else if (!this.atStart && firstVisible < PREFETCH_ROWS) this.loadMore("start");
        }
        const state = this.scroller.dataset;
        if (ready && state.state === "loading") {
            state.state = "ready";
            state.firstPageMs = String(Math.round(performance.now()));
            state.sinceStartMs = String(Math.round(performance.now() - this.started));
            this.callbacks.onState?.("ready");
        }
        state.pages = String(this.pages.length);
        state.rows = String(this.rows.filter((row) => row.keys).length);
        state.rendered = String(this.canvas.childElementCount);
        state.atStart = String(this.atStart);
        state.atEnd = String(this.atEnd);
        if (state.mode !== this.mode) this.callbacks.onMode?.(this.mode);
        if (this.mode === "paged") {
            const keys = this.rows.filter((row) => row.keys && row.depth === 0).map((row) => row.keys[row.keys.length - 1]);
            const summary = keys.length
                ? `${keys.length.toLocaleString()} children loaded, ${keys[0]} … ${keys[keys.length - 1]}`
                : "";
            if (summary !== this.summary) {
                this.summary = summary;
                this.callbacks.onSummary?.(summary);
            }
        }
        state.mode = this.mode;
        if (this.mode === "whole" && this.pages[0]?.loaded && hasChildren(this.pages[0].data)) {
            if (childKeys(this.pages[0].data).length > WHOLE_LIMIT) this.callbacks.onGrown?.();
        }
        if (this.hits.size > 0 && !this.decayTimer) {
            this.decayTimer = setTimeout(() => {
                this.decayTimer = null;
                this.scheduleFrame();
            }, 250);
        }
    }
}

/** Moves a change counter on to `slot`, emptying the slots it passes. */
function advance(entry, slot) {
    if (slot <= entry.slot) return;
    if (slot - entry.slot >= entry.counts.length) entry.counts.fill(0);
    else for (let next = entry.slot + 1; next <= slot; next++) entry.counts[next % entry.counts.length] = 0;
    entry.slot = slot;
}

/** The listen for the children between two key bounds; null (a plain listen) when unbounded. */
function keyRangeQuery(start, end) {
    if (!start && !end) return null;
    const query = { i: ".key" };
    if (start) {
        query.sp = start.key;
        query.sin = start.inclusive;
    }
    if (end) {
        query.ep = end.key;
        query.ein = end.inclusive;
    }
    return query;
}
