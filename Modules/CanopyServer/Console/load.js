// The Load view: charts of the server's own counters, drawn by the page (SVG built with DOM APIs).
// The page samples `/.console/api/load` each second and turns the totals into rates: connections,
// writes/s, events/s, fan-out latency p99 (from the histogram's buckets over the last interval),
// bytes/s sent to realtime connections, and limits tripped.

import { adminView, poll, refusalBlock, refusalText } from "./admin-api.js";
import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
/** Samples kept: two minutes at one a second. */
const KEPT = 120;
const WIDTH = 360;
const HEIGHT = 90;

function svg(tag, attributes = {}) {
    const element = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
    return element;
}

function compact(value) {
    if (value === null || value === undefined || Number.isNaN(value)) return "—";
    if (value >= 1e9) return `${(value / 1e9).toFixed(1)}G`;
    if (value >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
    if (value >= 1e4) return `${(value / 1e3).toFixed(1)}k`;
    if (value >= 100 || Number.isInteger(value)) return Math.round(value).toLocaleString();
    return value.toFixed(value >= 10 ? 1 : 2);
}

function bytes(value) {
    if (value === null || value === undefined) return "—";
    if (value >= 1024 * 1024) return `${(value / 1024 / 1024).toFixed(1)} MiB`;
    if (value >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
    return `${Math.round(value)} B`;
}

function milliseconds(value) {
    if (value === null || value === undefined) return "—";
    if (value >= 1000) return `${(value / 1000).toFixed(2)} s`;
    return `${value >= 10 ? value.toFixed(0) : value.toFixed(2)} ms`;
}

/**
 * The 99th percentile, in milliseconds, of the latencies recorded between two samples of a
 * histogram ({buckets: [[upper bound s, cumulative count]], count}), interpolated within its bucket
 * as Prometheus' histogram_quantile does; null when nothing was recorded. Above the last bound:
 * that bound.
 */
export function p99(before, after) {
    const total = after.count - before.count;
    if (!(total > 0)) return null;
    const target = 0.99 * total;
    let lowerBound = 0;
    let lowerCount = 0;
    for (let index = 0; index < after.buckets.length; index++) {
        const [bound, count] = after.buckets[index];
        const inWindow = count - (before.buckets[index] ? before.buckets[index][1] : 0);
        if (inWindow >= target) {
            const share = inWindow === lowerCount ? 1 : (target - lowerCount) / (inWindow - lowerCount);
            return (lowerBound + (bound - lowerBound) * share) * 1000;
        }
        lowerBound = bound;
        lowerCount = inWindow;
    }
    return lowerBound * 1000;
}

function limitTrips(sample) {
    return Object.values(sample.limitTrips || {}).reduce((sum, count) => sum + count, 0);
}

const SERIES = [
    { name: "connections", title: "Connections", unit: "open", format: compact, value: (now) => now.connections },
    { name: "writes", title: "Writes", unit: "/s", format: compact, rate: (s) => s.writes },
    { name: "events", title: "Events fanned out", unit: "/s", format: compact, rate: (s) => s.events },
    { name: "latency", title: "Fan-out latency p99", unit: "", format: milliseconds, value: (now, before) => (before ? p99(before.fanOutLatency, now.fanOutLatency) : null) },
    { name: "bytes", title: "Sent to realtime clients", unit: "/s", format: bytes, rate: (s) => s.bytesSent },
    { name: "limits", title: "Limits tripped", unit: "/s", format: compact, rate: limitTrips },
];

class Chart {
    constructor(series) {
        this.series = series;
        this.values = [];
        this.current = el("span", { class: "chart-value", text: "—" });
        this.scale = el("span", { class: "chart-scale hint" });
        this.line = svg("polyline", { class: "chart-line", points: "" });
        this.area = svg("polygon", { class: "chart-area", points: "" });
        const grid = [0.25, 0.5, 0.75].map((f) => svg("line", { class: "chart-grid", x1: 0, x2: WIDTH, y1: HEIGHT * f, y2: HEIGHT * f }));
        this.drawing = svg("svg", { class: "chart-svg", viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", role: "img", "aria-label": series.title });
        this.drawing.append(...grid, this.area, this.line);
        this.element = el(
            "figure",
            { class: `chart chart-${series.name}`, "data-series": series.name },
            el("figcaption", {}, el("span", { class: "chart-title", text: series.title }), el("span", { class: "spacer" }), this.current, series.unit ? el("span", { class: "muted", text: series.unit }) : null),
            this.drawing,
            this.scale,
        );
    }

    push(value) {
        this.values.push(value);
        if (this.values.length > KEPT) this.values.shift();
        const known = this.values.filter((v) => v !== null && v !== undefined);
        const top = Math.max(1e-9, ...known) * 1.15;
        const step = WIDTH / (KEPT - 1);
        const offset = KEPT - this.values.length;
        const points = [];
        this.values.forEach((v, index) => {
            if (v === null || v === undefined) return;
            points.push(`${((offset + index) * step).toFixed(1)},${(HEIGHT - (v / top) * HEIGHT).toFixed(1)}`);
        });
        this.line.setAttribute("points", points.join(" "));
        const first = points[0]?.split(",")[0];
        const last = points[points.length - 1]?.split(",")[0];
        this.area.setAttribute("points", points.length ? `${first},${HEIGHT} ${points.join(" ")} ${last},${HEIGHT}` : "");
        this.current.textContent = this.series.format(value);
        this.scale.textContent = known.length ? `max ${this.series.format(Math.max(...known))} over ${this.values.length} s` : "nothing recorded yet";
        this.element.dataset.last = value === null || value === undefined ? "" : String(value);
        this.element.dataset.points = String(points.length);
        this.element.dataset.max = known.length ? String(Math.max(...known)) : "0";
    }
}

export class LoadView {
    /** app: {rest}. */
    constructor(app) {
        this.app = app;
        this.previous = null;
        this.charts = SERIES.map((series) => new Chart(series));
        this.status = el("div", { class: "ops-status", role: "status", text: "Sampling…" });
        this.element = el(
            "section",
            { class: "view ops-view load-view", "aria-label": "Load" },
            el(
                "div",
                { class: "panel" },
                el("div", { class: "panel-header" }, el("h2", { text: "Load" }), el("span", { class: "muted", text: "the whole server, from its own counters (/metrics)" }), el("span", { class: "spacer" }), el("span", { class: "hint", text: "sampled every second · last 2 minutes" })),
                (this.chartBox = el("div", { class: "charts" }, this.charts.map((chart) => chart.element))),
                (this.refusal = el("div", { class: "ops-scroll", hidden: true })),
                this.status,
            ),
        );
        this.element.dataset.samples = "0";
    }

    start() {
        this.poller?.stop();
        this.poller = poll(() => this.sample());
    }

    destroy() {
        this.poller?.stop();
        this.poller = null;
    }

    async sample() {
        let now;
        try {
            now = await adminView(this.app, "load");
        } catch (error) {
            this.status.textContent = refusalText("The load view", error);
            this.status.classList.add("error");
            this.status.dataset.refused = String(error.status || "");
            this.chartBox.hidden = true;
            this.refusal.hidden = false;
            this.refusal.replaceChildren(refusalBlock(this.app, "The load view", error));
            // Signing in opens the view again; until then asking again each second changes nothing.
            if (error.status === 401 || error.status === 403) this.destroy();
            return;
        }
        this.chartBox.hidden = false;
        this.refusal.hidden = true;
        this.status.classList.remove("error");
        delete this.status.dataset.refused;
        const before = this.previous;
        const seconds = before ? Math.max(0.001, (now.time - before.time) / 1000) : null;
        for (const chart of this.charts) {
            const series = chart.series;
            let value = null;
            if (series.rate) value = before ? Math.max(0, (series.rate(now) - series.rate(before)) / seconds) : null;
            else value = series.value(now, before);
            if (before || !series.rate) chart.push(value);
        }
        this.previous = now;
        this.element.dataset.samples = String(Number(this.element.dataset.samples) + 1);
        this.status.textContent = `Sampled at ${new Date(now.time).toLocaleTimeString()} · ${compact(now.writes)} writes and ${compact(now.events)} events since the server started · ${compact(limitTrips(now))} limits tripped`;
    }
}
