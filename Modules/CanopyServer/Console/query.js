// The query bar: an ordering (key, value, priority or a child), start / end / equal bounds and a
// limit, turned into the realtime protocol's query object as the official clients send it.

import { el } from "./dom.js";
import { typedBound } from "./values.js";

const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;

/**
 * A query from the bar's fields: {ordering: {by, child}, wire (the listen's query object),
 * description}. Throws with what is wrong.
 */
export function buildQuery(fields) {
    const by = fields.by;
    const ordering = { by, child: fields.child.trim() };
    if (by === "child" && !ordering.child) throw new Error("Name the child to order by (for example height or address/city)");
    const bound = (text) => {
        if (by === "key") return text;
        const value = typedBound(text);
        if (by === "priority" && typeof value !== "number" && typeof value !== "string") {
            throw new Error("A priority bound is a number or a string");
        }
        return value;
    };
    const wire = {};
    if (by === "value") wire.i = ".value";
    else if (by === "key") wire.i = ".key";
    else if (by === "child") wire.i = ordering.child.split("/").filter((key) => key).join("/");
    const parts = [`orderBy ${by === "child" ? `child "${wire.i}"` : by}`];
    if (fields.equal !== "") {
        if (fields.start !== "" || fields.end !== "") throw new Error("Equal to cannot be combined with a start or an end");
        const value = bound(fields.equal);
        Object.assign(wire, { sp: value, sin: true, ep: value, ein: true });
        parts.push(`equalTo ${JSON.stringify(value)}`);
    } else {
        if (fields.start !== "") {
            const value = bound(fields.start);
            const after = fields.startKind === "startAfter";
            Object.assign(wire, { sp: value, sin: !after });
            if (after && by !== "key") wire.sn = "[MAX_NAME]";
            parts.push(`${fields.startKind} ${JSON.stringify(value)}`);
        }
        if (fields.end !== "") {
            const value = bound(fields.end);
            const before = fields.endKind === "endBefore";
            Object.assign(wire, { ep: value, ein: !before });
            if (before && by !== "key") wire.en = "[MIN_NAME]";
            parts.push(`${fields.endKind} ${JSON.stringify(value)}`);
        }
    }
    const limit = fields.limit === "" ? DEFAULT_LIMIT : Number(fields.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
        throw new Error(`The limit is a whole number from 1 to ${MAX_LIMIT}`);
    }
    wire.l = limit;
    wire.vf = fields.limitKind === "last" ? "r" : "l";
    parts.push(`${fields.limitKind === "last" ? "limitToLast" : "limitToFirst"} ${limit}`);
    return { ordering, wire, description: parts.join(" · "), fields };
}

/** The bar's element; onRun(query) or onRun(null) to clear. */
export function queryBar({ initial, onRun }) {
    const f = initial?.fields || {};
    const by = select("by", "Order by", [
        ["key", "key"],
        ["value", "value"],
        ["priority", "priority"],
        ["child", "child"],
    ], f.by || "child");
    const child = el("input", { name: "child", placeholder: "child, e.g. height", "aria-label": "Child to order by", value: f.child || "" });
    const startKind = select("startKind", "Start kind", [
        ["startAt", "start at"],
        ["startAfter", "start after"],
    ], f.startKind);
    const start = el("input", { name: "start", placeholder: "value", "aria-label": "Start", value: f.start || "" });
    const endKind = select("endKind", "End kind", [
        ["endAt", "end at"],
        ["endBefore", "end before"],
    ], f.endKind);
    const end = el("input", { name: "end", placeholder: "value", "aria-label": "End", value: f.end || "" });
    const equal = el("input", { name: "equal", placeholder: "value", "aria-label": "Equal to", value: f.equal || "" });
    const limitKind = select("limitKind", "Limit kind", [
        ["first", "first"],
        ["last", "last"],
    ], f.limitKind);
    const limit = el("input", {
        name: "limit",
        type: "number",
        min: "1",
        max: String(MAX_LIMIT),
        "aria-label": "Limit",
        value: f.limit || String(DEFAULT_LIMIT),
    });
    const problem = el("span", { class: "query-problem", role: "alert" });
    const syncChild = () => (child.disabled = by.value !== "child");
    by.addEventListener("change", syncChild);
    syncChild();
    const form = el(
        "form",
        { class: "query-bar", "aria-label": "Query" },
        field("Order by", by, child),
        field("", startKind, start),
        field("", endKind, end),
        field("equal to", equal),
        field("limit to", limitKind, limit),
        el(
            "div",
            { class: "query-buttons" },
            el("button", { type: "submit", class: "primary", "data-action": "run-query", text: "Run" }),
            el("button", { type: "button", "data-action": "clear-query", text: "Clear", onclick: () => onRun(null) }),
        ),
        problem,
    );
    form.addEventListener("submit", (event) => {
        event.preventDefault();
        problem.textContent = "";
        try {
            onRun(
                buildQuery({
                    by: by.value,
                    child: child.value,
                    startKind: startKind.value,
                    start: start.value,
                    endKind: endKind.value,
                    end: end.value,
                    equal: equal.value,
                    limitKind: limitKind.value,
                    limit: limit.value,
                }),
            );
        } catch (error) {
            problem.textContent = error.message;
        }
    });
    return form;
}

function select(name, label, options, chosen) {
    const element = el("select", { name, "aria-label": label });
    for (const [value, text] of options) element.append(el("option", { value, text, selected: value === chosen }));
    return element;
}

function field(label, ...controls) {
    return el("label", { class: "query-field" }, label ? el("span", { text: label }) : null, ...controls);
}
