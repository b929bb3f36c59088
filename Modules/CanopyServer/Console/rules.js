// The Rules view: the namespace's rules document (`/.settings/rules.json`, admin only), edited as
// text and saved; a refusal is shown at its line and column. The view is a list of panels so that
// others (a simulator, the log of refused requests) sit beside the editor.

import { el, iconButton, toast } from "./dom.js";

const LINE_HEIGHT = 20;

export class RulesView {
    /** app: {rest, namespace}. */
    constructor(app) {
        this.app = app;
        this.element = el("section", { class: "view rules-view", "aria-label": "Rules" });
        this.panels = [this.editorPanel()];
        this.element.append(...this.panels);
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
        this.clearError();
        this.status.textContent = "Loading…";
        try {
            this.textarea.value = await this.app.rest.rulesText();
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
}
