// The realtime protocol (WebSocket, version 5) as the official clients speak it: one connection per
// page, many listens on it. Docs: PROTOCOL.md, "Realtime protocol".

const FRAME_CHARS = 16384;
const KEEPALIVE_MS = 15000;

/** Why a request was not answered `ok`. */
export class RequestError extends Error {
    constructor(status, message) {
        super(message ? `${status}: ${message}` : status);
        this.status = status;
        this.detail = message;
    }
}

/** A canonical identifier of a query object (its members sorted). */
export function queryIdentifier(query) {
    if (!query) return "default";
    return JSON.stringify(Object.keys(query).sort().map((key) => [key, query[key]]));
}

export class Realtime {
    /**
     * namespace: the `ns` to connect to. onState(state, detail): "connecting" | "connected" |
     * "disconnected" | "shutdown". onAuthRevoked(status, reason).
     */
    constructor({ namespace, onState = () => {}, onAuthRevoked = () => {}, onEvent = () => {} }) {
        this.namespace = namespace;
        this.onState = onState;
        this.onAuthRevoked = onAuthRevoked;
        this.onEvent = onEvent;
        this.socket = null;
        this.connected = false;
        this.nextRequest = 1;
        this.pending = new Map();
        this.listens = new Map();
        this.nextTag = 1;
        this.credential = null;
        this.serverTimeOffset = 0;
        this.retryDelay = 500;
        this.frames = null;
        this.closed = false;
        this.waiters = [];
    }

    /** The server's clock, in milliseconds, as estimated from its hello. */
    serverNow() {
        return Date.now() + this.serverTimeOffset;
    }

    /** Opens the connection (and again whenever it drops, until close()). Resolves on the hello. */
    connect() {
        if (this.connected) return Promise.resolve();
        const ready = new Promise((resolve) => this.waiters.push(resolve));
        if (!this.socket) this.open();
        return ready;
    }

    close() {
        this.closed = true;
        clearInterval(this.keepalive);
        if (this.socket) this.socket.close();
    }

    open() {
        const scheme = location.protocol === "https:" ? "wss:" : "ws:";
        const namespace = this.namespace ? `&ns=${encodeURIComponent(this.namespace)}` : "";
        const url = `${scheme}//${location.host}/.ws?v=5${namespace}`;
        this.onState("connecting");
        const socket = new WebSocket(url);
        this.socket = socket;
        socket.onmessage = (event) => this.receiveFrame(event.data);
        socket.onclose = () => {
            if (this.socket !== socket) return;
            this.dropped();
        };
    }

    dropped() {
        this.socket = null;
        this.connected = false;
        this.frames = null;
        clearInterval(this.keepalive);
        for (const { reject } of this.pending.values()) reject(new RequestError("disconnected"));
        this.pending.clear();
        if (this.closed) return;
        this.onState("disconnected", this.lastError);
        this.lastError = null;
        setTimeout(() => this.open(), this.retryDelay);
        this.retryDelay = Math.min(this.retryDelay * 2, 10000);
    }

    receiveFrame(text) {
        if (this.frames) {
            this.frames.parts.push(text);
            if (this.frames.parts.length < this.frames.count) return;
            const whole = this.frames.parts.join("");
            this.frames = null;
            this.receive(whole);
            return;
        }
        if (text.length <= 6 && /^\d+$/.test(text)) {
            const count = Number(text);
            if (count > 0) this.frames = { count, parts: [] };
            return;
        }
        this.receive(text);
    }

    receive(text) {
        let message;
        try {
            message = JSON.parse(text);
        } catch {
            return;
        }
        if (message.t === "c") return this.control(message.d);
        const body = message.d;
        if (!body) return;
        if (typeof body.r === "number") {
            const request = this.pending.get(body.r);
            this.pending.delete(body.r);
            if (!request) return;
            const answer = body.b || {};
            if (answer.s === "ok") request.resolve(answer.d);
            else request.reject(new RequestError(answer.s, typeof answer.d === "string" ? answer.d : ""));
            return;
        }
        this.push(body.a, body.b || {});
    }

    control(control) {
        switch (control.t) {
            case "h":
                this.serverTimeOffset = control.d.ts - Date.now();
                this.hello();
                break;
            case "s":
                this.closed = true;
                this.onState("shutdown", control.d);
                break;
            case "r":
                // Another process serves the namespace (a cluster): the page's policy lets it
                // connect to its own origin only, so it says where, and stops.
                this.closed = true;
                this.onState("moved", control.d);
                if (this.socket) this.socket.close();
                break;
            case "e":
                this.lastError = String(control.d || "");
                break;
            default:
                break;
        }
    }

    async hello() {
        this.retryDelay = 500;
        this.connected = true;
        clearInterval(this.keepalive);
        this.lastSent = Date.now();
        this.keepalive = setInterval(() => {
            if (Date.now() - this.lastSent >= KEEPALIVE_MS) this.sendText("0");
        }, KEEPALIVE_MS / 3);
        if (this.credential) {
            try {
                await this.request("auth", { cred: this.credential });
            } catch (error) {
                this.onAuthRevoked(error.status, error.detail);
            }
        }
        for (const listen of this.listens.values()) this.sendListen(listen);
        this.onState("connected");
        const waiters = this.waiters;
        this.waiters = [];
        for (const resolve of waiters) resolve();
    }

    sendText(text) {
        if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
        this.lastSent = Date.now();
        if (text.length <= FRAME_CHARS) {
            this.socket.send(text);
            return true;
        }
        const parts = [];
        for (let at = 0; at < text.length; at += FRAME_CHARS) parts.push(text.slice(at, at + FRAME_CHARS));
        this.socket.send(String(parts.length));
        for (const part of parts) this.socket.send(part);
        return true;
    }

    /** Sends request `action` with `body`; resolves with the answer's data, rejects with RequestError. */
    request(action, body) {
        const number = this.nextRequest++;
        return new Promise((resolve, reject) => {
            const sent = this.sendText(JSON.stringify({ t: "d", d: { r: number, a: action, b: body } }));
            if (!sent) return reject(new RequestError("disconnected", "not connected to the server"));
            this.pending.set(number, { resolve, reject });
        });
    }

    /** Signs the connection in with `credential`; resolves with the answer ({auth, expires}). */
    async authenticate(credential) {
        const answer = await this.request("auth", { cred: credential });
        this.credential = credential;
        return answer;
    }

    put(path, data) {
        return this.request("p", { p: path, d: data });
    }

    merge(path, data) {
        return this.request("m", { p: path, d: data });
    }

    /**
     * Listens to `path` (a string) with `query` (a query object or null). handler.onData(op) gets each
     * push: {kind: "d" | "m", path (string), data}; handler.onAnswer(warnings) the answer;
     * handler.onError(error) a refusal or a revocation. Returns a function that stops listening.
     */
    listen(path, query, handler) {
        const key = `${path}|${queryIdentifier(query)}`;
        const listen = { key, path, query, handler, tag: query ? this.nextTag++ : null };
        const previous = this.listens.get(key);
        if (previous) previous.handler.onError?.(new RequestError("replaced", "listened again"));
        this.listens.set(key, listen);
        if (this.connected) this.sendListen(listen);
        return () => {
            if (this.listens.get(key) !== listen) return;
            this.listens.delete(key);
            const body = { p: path };
            if (query) body.q = query;
            if (listen.tag !== null) body.t = listen.tag;
            this.request("n", body).catch(() => {});
        };
    }

    sendListen(listen) {
        const body = { p: listen.path, h: "" };
        if (listen.query) {
            body.q = listen.query;
            body.t = listen.tag;
        }
        this.request("q", body).then(
            (answer) => {
                if (this.listens.get(listen.key) === listen) listen.handler.onAnswer?.((answer && answer.w) || []);
            },
            (error) => {
                if (error.status === "disconnected") return;
                if (this.listens.get(listen.key) !== listen) return;
                this.listens.delete(listen.key);
                listen.handler.onError?.(error);
            },
        );
    }

    push(action, body) {
        switch (action) {
            case "d":
            case "m":
                this.onEvent();
                this.deliver({ kind: action, path: body.p, data: body.d }, body.t);
                break;
            case "c":
                for (const listen of this.listens.values()) {
                    if (listen.path === body.p && queryIdentifier(listen.query) === queryIdentifier(body.q || null)) {
                        this.listens.delete(listen.key);
                        listen.handler.onError?.(new RequestError("permission_denied", "listen revoked"));
                    }
                }
                break;
            case "ac":
                this.credential = null;
                this.onAuthRevoked(body.s, body.d);
                break;
            default:
                break;
        }
    }

    deliver(op, tag) {
        const path = normalize(op.path);
        op.path = path;
        for (const listen of this.listens.values()) {
            if (tag !== undefined && tag !== null) {
                if (listen.tag === tag) listen.handler.onData(op);
                continue;
            }
            if (listen.tag !== null) continue;
            const at = normalize(listen.path);
            if (path === at || path.startsWith(at === "/" ? "/" : at + "/") || at.startsWith(path === "/" ? "/" : path + "/")) {
                listen.handler.onData(op);
            }
        }
    }
}

function normalize(path) {
    return "/" + String(path || "").split("/").filter((key) => key).join("/");
}
