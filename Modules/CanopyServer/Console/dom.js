// Building DOM. Text is only ever set as text (textContent, attributes): users' keys and values
// are data, never markup.

/**
 * An element: el("button", {class: "x", onclick: f, "data-key": k}, "text", child, ...). Attributes
 * named on... become listeners; strings become text nodes.
 */
export function el(tag, attributes = {}, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
        if (value === undefined || value === null || value === false) continue;
        if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
        else if (name === "class") element.className = value;
        else if (name === "text") element.textContent = value;
        else if (value === true) element.setAttribute(name, "");
        else element.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
        if (child === null || child === undefined || child === false) continue;
        element.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return element;
}

/** A modal dialog; resolves with what the pressed action returns (undefined when dismissed). */
export function dialog({ title, body, actions, className }) {
    return new Promise((resolve) => {
        const status = el("p", { class: "dialog-status", role: "status" });
        const footer = el("div", { class: "dialog-actions" });
        const box = el(
            "dialog",
            { class: `dialog ${className || ""}`, "aria-label": title },
            el("h2", { text: title }),
            el("div", { class: "dialog-body" }, body),
            status,
            footer,
        );
        let settled = false;
        const finish = (value) => {
            if (settled) return;
            settled = true;
            box.close();
            box.remove();
            resolve(value);
        };
        for (const action of actions) {
            const button = el("button", {
                type: "button",
                class: action.kind || "",
                "data-action": action.name || action.label,
                text: action.label,
            });
            button.addEventListener("click", async () => {
                if (!action.run) return finish(undefined);
                status.textContent = "";
                status.classList.remove("error");
                for (const other of footer.querySelectorAll("button")) other.disabled = true;
                try {
                    const result = await action.run({ say: (text) => (status.textContent = text) });
                    if (result !== false) finish(result === undefined ? true : result);
                } catch (error) {
                    status.textContent = error.message || String(error);
                    status.classList.add("error");
                } finally {
                    for (const other of footer.querySelectorAll("button")) other.disabled = false;
                }
            });
            footer.append(button);
        }
        box.addEventListener("cancel", (event) => {
            event.preventDefault();
            finish(undefined);
        });
        box.addEventListener("keydown", (event) => {
            if (event.key !== "Enter" || event.target.tagName === "TEXTAREA" || event.target.tagName === "BUTTON") return;
            const primary = footer.querySelector("button.primary, button.danger");
            if (primary) {
                event.preventDefault();
                primary.click();
            }
        });
        document.body.append(box);
        box.showModal();
        const first = box.querySelector("input, select, textarea");
        if (first) first.focus();
    });
}

let toastTimer = null;

/** A short message at the bottom of the page. */
export function toast(text, kind = "info") {
    let box = document.getElementById("toast");
    if (!box) {
        box = el("div", { id: "toast", role: "status" });
        document.body.append(box);
    }
    box.textContent = text;
    box.className = `toast ${kind} shown`;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => box.classList.remove("shown"), kind === "error" ? 8000 : 3500);
}

const ICONS = {
    plus: "M8 3v10M3 8h10",
    open: "M6 3h7v7M13 3 4 12",
    rename: "M10.5 2.5l3 3L6 13H3v-3z",
    clone: "M5.5 5.5h8v8h-8zM3 10.5V3h7.5",
    download: "M8 2v8M4.5 7 8 10.5 11.5 7M3 13.5h10",
    upload: "M8 10.5V2.5M4.5 6 8 2.5 11.5 6M3 13.5h10",
    remove: "M3.5 4.5h9M6.5 4.5V3h3v1.5M5 4.5l.5 9h5l.5-9",
    filter: "M2.5 3h11l-4.2 5v4.5l-2.6 1.2V8z",
    first: "M3 3h10M8 13V6M4.5 9.5 8 6l3.5 3.5",
    last: "M3 13h10M8 3v7M4.5 6.5 8 10l3.5-3.5",
    edit: "M10.5 2.5l3 3L6 13H3v-3z",
    check: "M3 8.5l3 3 7-7",
    reload: "M13 8a5 5 0 1 1-1.6-3.7M13 2.5v2.8h-2.8",
    close: "M4 4l8 8M12 4l-8 8",
};

/** A 16×16 stroked icon. */
export function icon(name) {
    const namespace = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(namespace, "svg");
    svg.setAttribute("viewBox", "0 0 16 16");
    svg.setAttribute("width", "16");
    svg.setAttribute("height", "16");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("class", "icon");
    const path = document.createElementNS(namespace, "path");
    path.setAttribute("d", ICONS[name]);
    svg.append(path);
    return svg;
}

/** A button with an icon and an accessible name (and optionally visible text). */
export function iconButton(name, label, onclick, { text, action, className } = {}) {
    return el(
        "button",
        {
            type: "button",
            class: `icon-button ${className || ""} ${text ? "with-text" : ""}`,
            title: label,
            "aria-label": label,
            "data-action": action,
            onclick,
        },
        icon(name),
        text ? el("span", { text }) : null,
    );
}
