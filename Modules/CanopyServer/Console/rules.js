// The Rules view: the namespace's rules document (`/.settings/rules.json`, admin only), edited as
// text and saved; a refusal is shown at its line and column. Beside it the simulator
// (`/.settings/rules/simulate.json`: the server evaluates a request and names the deciding rule) and
// the live log of refused requests (`/.settings/rules/refusals.json`, polled with a cursor), both
// admin only. Everything from the server is shown as text.

import { el, iconButton, toast } from "./dom.js";
import { RESTError } from "./rest.js";

const LINE_HEIGHT = 20;
/** How often the log of refused requests asks for new ones while it is on screen. */
const LOG_INTERVAL = 1000;
/** The most refusals the log shows (the server keeps the last 1,000). */
const LOG_ROWS = 1000;

export class RulesView {
    /** app: {rest, namespace}. */
    constructor(app) {
        this.app = app;
        this.element = el("section", { class: "view rules-view", "aria-label": "Rules" });
        this.panels = [this.editorPanel(), this.simulatorPanel(), this.logPanel()];
        this.element.append(...this.panels);
        this.logCursor = 0;
    }

    editorPanel() {
        this.textarea = el("textarea", {
            class: "rules-text",
            spellcheck: "false",
            "aria-label": "Rules document",
            wrap: "off",
        });
        this.gutter = el("div", { class: "gutter", "aria-hidden": "true" });
        this.status = el("div", { class: "rules-status", role: "status" });
        this.textarea.addEventListener("input", () => {
            this.clearError();
            this.numberLines();
        });
        this.textarea.addEventListener("scroll", () => (this.gutter.scrollTop = this.textarea.scrollTop));
        this.textarea.addEventListener("keydown", (event) => {
            if (event.key === "Tab" && !event.shiftKey) {
                event.preventDefault();
                this.textarea.setRangeText("  ", this.textarea.selectionStart, this.textarea.selectionEnd, "end");
                this.numberLines();
            }
            if ((event.metaKey || event.ctrlKey) && event.key === "s") {
                event.preventDefault();
                this.save();
            }
        });
        return el(
            "div",
            { class: "panel rules-editor" },
            el(
                "div",
                { class: "panel-header" },
                el("h2", { text: "Security rules" }),
                el("span", { class: "muted", text: `namespace ${this.app.namespace || "default"} · /.settings/rules.json` }),
                el("span", { class: "spacer" }),
                iconButton("reload", "Load the rules in force again", () => this.load(), { text: "Reload", action: "reload-rules" }),
                iconButton("check", "Save the rules (Ctrl+S)", () => this.save(), {
                    text: "Save",
                    action: "save-rules",
                    className: "primary",
                }),
            ),
            el("div", { class: "editor" }, this.gutter, this.textarea),
            this.status,
        );
    }

    async load() {
        this.startLog();
        if (!this.simPath.dataset.edited) this.simPath.value = "/" + (this.app.focus || []).join("/");
        this.clearError();
        this.status.textContent = "Loading…";
        try {
            this.textarea.value = await this.app.rest.rulesText();
            this.savedText = this.textarea.value;
            this.status.textContent = "The rules in force.";
        } catch (error) {
            this.textarea.value = "";
            this.showError(
                error.status === 401
                    ? "Reading the rules needs the admin credential (sign in with the admin secret)."
                    : `Could not read the rules: ${error.message}`,
            );
        }
        this.numberLines();
    }

    async save() {
        this.clearError();
        this.status.textContent = "Saving…";
        try {
            await this.app.rest.setRules(this.textarea.value);
            this.savedText = this.textarea.value;
            this.status.textContent = `Saved at ${new Date().toLocaleTimeString()}; these rules are in force.`;
            toast("Rules saved");
        } catch (error) {
            const place = /^Line (\d+), column (\d+): (.*)$/s.exec(error.message);
            if (place) {
                this.showError(`Refused at line ${place[1]}, column ${place[2]}: ${place[3]}`, Number(place[1]), Number(place[2]));
            } else if (error.status === 401) {
                this.showError("Setting the rules needs the admin credential.");
            } else {
                this.showError(`Refused: ${error.message}`);
            }
        }
    }

    numberLines() {
        const count = this.textarea.value.split("\n").length;
        if (this.gutter.childElementCount !== count) {
            const lines = [];
            for (let line = 1; line <= count; line++) lines.push(el("div", { text: String(line) }));
            this.gutter.replaceChildren(...lines);
        }
        if (this.errorLine) this.gutter.children[this.errorLine - 1]?.classList.add("error-line");
    }

    showError(message, line, column) {
        this.status.textContent = message;
        this.status.classList.add("error");
        this.status.dataset.line = line ? String(line) : "";
        this.status.dataset.column = column ? String(column) : "";
        if (!line) return;
        this.errorLine = line;
        this.numberLines();
        const lines = this.textarea.value.split("\n");
        let offset = 0;
        for (let index = 0; index < line - 1 && index < lines.length; index++) offset += lines[index].length + 1;
        offset += Math.max(0, column - 1);
        this.textarea.focus();
        this.textarea.setSelectionRange(offset, Math.min(offset + 1, this.textarea.value.length));
        this.textarea.scrollTop = Math.max(0, (line - 4) * LINE_HEIGHT);
    }

    clearError() {
        this.status.classList.remove("error");
        this.errorLine = null;
        for (const line of this.gutter.querySelectorAll(".error-line")) line.classList.remove("error-line");
    }

    // The simulator.

    simulatorPanel() {
        const field = (label, control, className = "") => el("label", { class: `sim-field ${className}` }, el("span", { text: label }), control);
        this.simOperation = el(
            "select",
            { name: "sim-operation", "aria-label": "Operation" },
            el("option", { value: "read", text: "read" }),
            el("option", { value: "set", text: "write (set)" }),
            el("option", { value: "update", text: "update" }),
        );
        this.simPath = el("input", { name: "sim-path", value: "/", spellcheck: "false", "aria-label": "Path" });
        this.simPath.addEventListener("input", () => (this.simPath.dataset.edited = "true"));
        this.simAuthKind = el(
            "select",
            { name: "sim-auth-kind", "aria-label": "Authentication" },
            el("option", { value: "none", text: "unauthenticated" }),
            el("option", { value: "uid", text: "a uid" }),
            el("option", { value: "claims", text: "token claims (JSON)" }),
        );
        this.simUid = el("input", { name: "sim-uid", placeholder: "uid", spellcheck: "false", "aria-label": "uid" });
        this.simClaims = el("textarea", {
            name: "sim-claims",
            rows: "2",
            spellcheck: "false",
            placeholder: '{"uid": "ada", "admin": true}',
            "aria-label": "Token claims",
        });
        this.simAuthPreview = el("div", { class: "sim-auth-preview muted" });
        this.simData = el("textarea", { name: "sim-data", rows: "3", spellcheck: "false", placeholder: '{"name": "Ada"}', "aria-label": "Data" });
        this.simQuery = el("input", {
            name: "sim-query",
            spellcheck: "false",
            placeholder: 'orderBy="owner"&equalTo="ada"',
            "aria-label": "Query",
        });
        this.simDraft = el("input", { type: "checkbox", name: "sim-draft" });
        this.simResult = el("div", { class: "sim-result", role: "status", "aria-live": "polite" });
        this.simDataField = field("Data (JSON)", this.simData, "wide");
        this.simQueryField = field("Query (REST parameters, optional)", this.simQuery, "wide");
        this.simUidField = field("uid", this.simUid, "grow");
        this.simClaimsField = field("Claims (auth.token)", this.simClaims, "wide");
        const refresh = () => this.simulatorFields();
        for (const control of [this.simOperation, this.simAuthKind]) control.addEventListener("change", refresh);
        for (const control of [this.simUid, this.simClaims]) control.addEventListener("input", refresh);
        const form = el(
            "form",
            { class: "sim-form" },
            field("Operation", this.simOperation),
            field("Path", this.simPath, "grow"),
            field("Auth", this.simAuthKind),
            this.simUidField,
            this.simClaimsField,
            this.simAuthPreview,
            this.simDataField,
            this.simQueryField,
            el(
                "div",
                { class: "sim-actions" },
                el("label", { class: "sim-draft" }, this.simDraft, el("span", { text: "Evaluate the draft in the editor (not saved)" })),
                el("span", { class: "spacer" }),
                el("button", { type: "submit", class: "primary", "data-action": "simulate", text: "Simulate" }),
            ),
        );
        form.addEventListener("submit", (event) => {
            event.preventDefault();
            this.simulate();
        });
        this.simulatorFields();
        return el(
            "div",
            { class: "panel rules-simulator" },
            el(
                "div",
                { class: "panel-header" },
                el("h2", { text: "Simulator" }),
                el("span", { class: "muted", text: "evaluated by the server, on the data as it is now" }),
            ),
            form,
            this.simResult,
        );
    }

    /** Shows the fields the operation and the kind of auth need, and the `auth` the rules will see. */
    simulatorFields() {
        const operation = this.simOperation.value;
        this.simDataField.hidden = operation === "read";
        this.simQueryField.hidden = operation !== "read";
        this.simUidField.hidden = this.simAuthKind.value !== "uid";
        this.simClaimsField.hidden = this.simAuthKind.value !== "claims";
        try {
            const auth = this.simulatedAuth();
            this.simAuthPreview.textContent = `auth = ${JSON.stringify(auth)}`;
            this.simAuthPreview.classList.remove("error");
        } catch (error) {
            this.simAuthPreview.textContent = error.message;
            this.simAuthPreview.classList.add("error");
        }
    }

    /**
     * The `auth` variable to simulate: null, a user signed in with a custom token, or the user an
     * ID token with these claims names (auth.uid from sub, user_id or uid; auth.token the claims).
     */
    simulatedAuth() {
        const kind = this.simAuthKind.value;
        if (kind === "none") return null;
        if (kind === "uid") {
            const uid = this.simUid.value.trim();
            if (!uid) throw new Error("Enter a uid");
            return { uid, provider: "custom", token: { sub: uid, firebase: { sign_in_provider: "custom" } } };
        }
        let claims;
        try {
            claims = JSON.parse(this.simClaims.value || "{}");
        } catch (error) {
            throw new Error(`The claims are not JSON: ${error.message}`);
        }
        if (!claims || typeof claims !== "object" || Array.isArray(claims)) throw new Error("The claims are a JSON object");
        const uid = [claims.sub, claims.user_id, claims.uid].find((value) => typeof value === "string" && value);
        if (!uid) throw new Error("The claims name no user: give sub, user_id or uid");
        let provider = claims.firebase?.sign_in_provider || "custom";
        if (typeof provider === "string" && provider.endsWith(".com")) provider = provider.slice(0, -4);
        return { uid, provider, token: claims };
    }

    async simulate() {
        const body = { path: this.simPath.value.trim() || "/", operation: this.simOperation.value };
        try {
            body.auth = this.simulatedAuth();
            if (body.operation !== "read") {
                try {
                    body.data = JSON.parse(this.simData.value);
                } catch (error) {
                    throw new Error(`The data is not JSON: ${error.message}`);
                }
            } else if (this.simQuery.value.trim()) {
                body.query = Object.fromEntries(new URLSearchParams(this.simQuery.value.trim()));
            }
        } catch (error) {
            return this.showVerdict(null, error.message);
        }
        if (this.simDraft.checked) body.rules = this.textarea.value;
        this.simResult.replaceChildren(el("p", { class: "muted", text: "Asking the server…" }));
        try {
            this.showVerdict(await this.tool("simulate", { method: "POST", body }));
        } catch (error) {
            const place = /^Line (\d+), column (\d+): (.*)$/s.exec(error.message);
            if (place) this.showError(`The draft does not parse: line ${place[1]}, column ${place[2]}: ${place[3]}`, Number(place[1]), Number(place[2]));
            this.showVerdict(null, error.status === 401 ? "The simulator needs the admin credential." : error.message);
        }
    }

    showVerdict(answer, problem) {
        this.simResult.dataset.runs = String(Number(this.simResult.dataset.runs || 0) + 1);
        if (!answer) {
            this.simResult.dataset.verdict = "error";
            this.simResult.replaceChildren(el("p", { class: "sim-problem", text: problem }));
            return;
        }
        const allowed = answer.allowed === true;
        this.simResult.dataset.verdict = allowed ? "allowed" : "denied";
        const when = new Date(answer.now).toLocaleTimeString();
        const lines = [
            el(
                "div",
                { class: "verdict-line" },
                el("span", { class: `verdict ${allowed ? "allowed" : "denied"}`, text: allowed ? "Allowed" : "Denied" }),
                el("span", { class: "verdict-request", text: `${answer.operation} ${answer.path}` }),
                el("span", { class: "muted", text: `${answer.rules === "draft" ? "draft rules" : "saved rules"} · ${when}` }),
            ),
        ];
        if (!answer.enforced) {
            lines.push(el("p", { class: "muted", text: "No rules were ever set for this namespace: the server allows everything." }));
        }
        if (allowed) {
            lines.push(
                answer.rule
                    ? el("div", { class: "decided-by" }, el("span", { class: "muted", text: "Decided by " }), ruleLine(answer.rule))
                    : el("p", { class: "muted", text: "Nothing to write: an update with no members needs no rule." }),
            );
        } else if (answer.denial) {
            lines.push(denialBlock(answer.denial));
        }
        this.simResult.replaceChildren(...lines);
    }

    /** A request to one of the rules tools (`simulate`, `refusals`) with the console's credential. */
    async tool(name, { method = "GET", body, parameters = {} } = {}) {
        const query = new URLSearchParams({ ns: this.app.rest.namespace || "", ...parameters });
        const response = await fetch(`/.settings/rules/${name}.json?${query}`, {
            method,
            headers: this.app.rest.headers(body ? { "Content-Type": "application/json" } : {}),
            body: body ? JSON.stringify(body) : undefined,
            cache: "no-store",
        });
        const text = await response.text();
        let json = null;
        try {
            json = JSON.parse(text);
        } catch {
            // Not JSON: the text is the message.
        }
        if (!response.ok) throw new RESTError(response.status, (json && json.error) || text);
        return json;
    }

    // The log of refused requests.

    logPanel() {
        this.logStatus = el("span", { class: "muted log-status", text: "" });
        this.logList = el("div", { class: "refusal-list", role: "log", "aria-label": "Refused requests" });
        this.logEmpty = el("p", { class: "muted refusal-empty", text: "No request was refused since the namespace opened." });
        return el(
            "div",
            { class: "panel refusal-log" },
            el(
                "div",
                { class: "panel-header" },
                el("h2", { text: "Refused requests" }),
                this.logStatus,
                el("span", { class: "spacer" }),
                iconButton("close", "Clear the list (the server keeps its log)", () => this.clearLog(), { action: "clear-log" }),
            ),
            el(
                "div",
                { class: "refusal-row refusal-head", "aria-hidden": "true" },
                ...["time", "operation", "path", "who", "via", "rule"].map((text) => el("span", { text })),
            ),
            this.logList,
            this.logEmpty,
        );
    }

    clearLog() {
        this.logList.replaceChildren();
        this.logEmpty.hidden = false;
    }

    /** Polls the log while the view is on screen (a view taken off the page stops at its next turn). */
    startLog() {
        if (this.logRunning) return;
        this.logRunning = true;
        this.pollLog();
    }

    async pollLog() {
        if (!this.element.isConnected) {
            this.logRunning = false;
            return;
        }
        try {
            const answer = await this.tool("refusals", { parameters: { after: String(this.logCursor) } });
            if (answer.cursor < this.logCursor) {
                // The namespace was opened again (a restart, or idle and closed): a new log.
                this.logCursor = 0;
                this.clearLog();
                return this.pollLog();
            }
            this.logCursor = answer.cursor;
            this.addRefusals(answer.refusals);
            this.logStatus.textContent = `live · newest first · the server keeps the last ${answer.capacity.toLocaleString()}`;
            this.logStatus.classList.remove("error");
        } catch (error) {
            this.logStatus.classList.add("error");
            if (error.status === 401) {
                this.logStatus.textContent = "The log needs the admin credential.";
                this.logRunning = false;
                return;
            }
            this.logStatus.textContent = `Could not read the log: ${error.message}`;
        }
        setTimeout(() => this.pollLog(), LOG_INTERVAL);
    }

    /** Adds refusals (newest first) at the top of the list. */
    addRefusals(refusals) {
        if (refusals.length === 0) return;
        const rows = refusals.map((refusal) => refusalRow(refusal));
        this.logList.prepend(...rows);
        while (this.logList.childElementCount > LOG_ROWS) this.logList.lastElementChild.remove();
        this.logEmpty.hidden = true;
    }
}

/** `/users/$uid/.write at /users/ada: expression`, its parts marked. */
function ruleLine(rule) {
    const location = rule.location.endsWith("/") ? rule.location + rule.kind : `${rule.location}/${rule.kind}`;
    return el(
        "span",
        { class: "rule-line" },
        el("code", { class: "rule-location", text: location }),
        el("span", { class: "muted", text: " at " }),
        el("code", { text: rule.path }),
        el("span", { class: "muted", text: ": " }),
        el("code", { class: "rule-expression", text: rule.expression }),
    );
}

/** Why the rules refused: the rules tried and how each failed, or the `.validate` that refused the data. */
function denialBlock(denial) {
    if (denial.reason === "invalidData") {
        return el(
            "div",
            { class: "denial" },
            el("p", { text: "A .validate rule refused the data:" }),
            el("ul", { class: "tried" }, failureItem(denial.failure)),
        );
    }
    const heading =
        denial.tried.length === 0
            ? `No ${denial.kind} rule at or above ${denial.path}: nothing grants it.`
            : `No ${denial.kind} rule at or above ${denial.path} granted it. Tried, from the root down:`;
    return el(
        "div",
        { class: "denial" },
        el("p", { text: heading }),
        denial.tried.length ? el("ul", { class: "tried" }, ...denial.tried.map(failureItem)) : null,
    );
}

function failureItem(failure) {
    return el(
        "li",
        {},
        ruleLine(failure.rule),
        el("span", { class: "failure", text: failure.error ? ` failed: ${failure.error}` : " was false" }),
    );
}

/** The rules that refused, in a few words: `.validate /users/$uid/age`, or the rules tried. */
function denialShort(denial) {
    const rule = (reference) => (reference.location.endsWith("/") ? reference.location : reference.location + "/") + reference.kind;
    if (denial.reason === "invalidData") return `invalid: ${rule(denial.failure.rule)}`;
    if (denial.tried.length === 0) return `no ${denial.kind} rule`;
    return `${denial.tried.map((failure) => rule(failure.rule)).join(", ")} ${denial.tried.length === 1 ? "was" : "were"} false`;
}

function refusalRow(refusal) {
    const time = new Date(refusal.time);
    const clock = `${time.toLocaleTimeString([], { hour12: false })}.${String(time.getMilliseconds()).padStart(3, "0")}`;
    const who = refusal.uid !== null ? refusal.uid : refusal.authenticated ? "(no uid)" : "unauthenticated";
    const row = el(
        "summary",
        { class: "refusal-row" },
        el("span", { class: "refusal-time", text: clock, title: time.toISOString() }),
        el("span", { class: "refusal-operation", text: refusal.operation }),
        el("code", { class: "refusal-path", text: refusal.path, title: refusal.path }),
        el("span", { class: refusal.uid !== null ? "refusal-who" : "refusal-who muted", text: who, title: who }),
        el("span", { class: "refusal-transport muted", text: refusal.transport || "" }),
        el("span", { class: "refusal-summary", text: denialShort(refusal.denial), title: refusal.summary }),
    );
    return el("details", { class: "refusal", "data-sequence": String(refusal.sequence) }, row, denialBlock(refusal.denial));
}
