// REST requests with the console's credential (an `Authorization: Bearer` header, as every client
// sends it), JSON uploads with progress, and exports streamed to a file.

/** A failed REST request: the status and the server's message. */
export class RESTError extends Error {
    constructor(status, message) {
        super(message || `HTTP ${status}`);
        this.status = status;
    }
}

export class REST {
    constructor({ namespace, credential }) {
        this.namespace = namespace;
        this.credential = credential;
    }

    /**
     * The URL of `keys` (an array) with query parameters, percent-encoded (a space as %20: the
     * server reads a `+` as itself, as Firebase does).
     */
    url(keys, parameters = {}) {
        const path = keys.length === 0 ? "/.json" : "/" + keys.map(encodeURIComponent).join("/") + ".json";
        const pairs = Object.entries(this.namespace ? { ns: this.namespace, ...parameters } : parameters);
        return `${path}?${pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join("&")}`;
    }

    headers(extra = {}) {
        const headers = { ...extra };
        if (this.credential) headers.Authorization = `Bearer ${this.credential}`;
        return headers;
    }

    /** GET `keys` with parameters; resolves with the parsed JSON. */
    async get(keys, parameters = {}) {
        const response = await fetch(this.url(keys, parameters), { headers: this.headers(), cache: "no-store" });
        return answer(response);
    }

    /** The rules document as text. */
    async rulesText() {
        const response = await fetch(`/.settings/rules.json?ns=${encodeURIComponent(this.namespace)}`, {
            headers: this.headers(),
            cache: "no-store",
        });
        if (!response.ok) throw new RESTError(response.status, await errorMessage(response));
        return response.text();
    }

    /** Replaces the rules document; a refusal carries the server's line and column. */
    async setRules(text) {
        const response = await fetch(`/.settings/rules.json?ns=${encodeURIComponent(this.namespace)}`, {
            method: "PUT",
            headers: this.headers({ "Content-Type": "application/json" }),
            body: text,
        });
        return answer(response);
    }

    /**
     * Sends `body` (a Blob or a string) with `method` to `keys`, reporting onProgress(sent, total);
     * resolves when the server answered 2xx.
     */
    upload(method, keys, body, onProgress) {
        return new Promise((resolve, reject) => {
            const request = new XMLHttpRequest();
            request.open(method, this.url(keys, { print: "silent" }));
            for (const [name, value] of Object.entries(this.headers({ "Content-Type": "application/json" }))) {
                request.setRequestHeader(name, value);
            }
            request.upload.onprogress = (event) => onProgress(event.loaded, event.total);
            request.onload = () => {
                if (request.status >= 200 && request.status < 300) return resolve();
                let message = request.responseText;
                try {
                    message = JSON.parse(request.responseText).error || message;
                } catch {
                    // Not JSON: the text as it came.
                }
                reject(new RESTError(request.status, message));
            };
            request.onerror = () => reject(new RESTError(0, "the upload failed (connection lost)"));
            request.send(body);
        });
    }
}

async function errorMessage(response) {
    const text = await response.text();
    try {
        return JSON.parse(text).error || text;
    } catch {
        return text;
    }
}

async function answer(response) {
    if (!response.ok) throw new RESTError(response.status, await errorMessage(response));
    if (response.status === 204) return null;
    return response.json();
}

// Export: a service worker answers a one-time download URL by streaming the REST GET, credential in
// its header, so that neither the data passes through the page's memory nor the credential through
// a URL. Without service workers (a page not served from a secure origin), a link to the REST URL.

let workerRegistration = null;

async function exportWorker() {
    if (!("serviceWorker" in navigator)) return null;
    if (!workerRegistration) {
        workerRegistration = navigator.serviceWorker
            .register("/.console/export-worker.js", { scope: "/.console/download/" })
            .then(
                (registration) => activeWorker(registration),
                () => null,
            );
    }
    return workerRegistration;
}

function activeWorker(registration) {
    if (registration.active) return registration.active;
    const worker = registration.installing || registration.waiting;
    return new Promise((resolve) => {
        worker.addEventListener("statechange", () => {
            if (worker.state === "activated") resolve(worker);
            if (worker.state === "redundant") resolve(null);
        });
    });
}

/**
 * Downloads `keys` as `filename`, streamed by the browser (format=export keeps priorities).
 * onResult(status, message) tells how the server answered.
 */
export async function exportNode(rest, keys, filename, onResult) {
    const url = rest.url(keys, { format: "export" });
    const worker = await exportWorker();
    if (!worker) {
        const link = document.createElement("a");
        link.href = rest.credential ? rest.url(keys, { format: "export", auth: rest.credential }) : url;
        link.download = filename;
        document.body.append(link);
        link.click();
        link.remove();
        onResult(0, "");
        return;
    }
    const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (n) => n.toString(16).padStart(2, "0")).join("");
    const channel = new MessageChannel();
    const registered = new Promise((resolve) => {
        channel.port1.onmessage = (event) => {
            if (event.data === "registered") return resolve();
            onResult(event.data.status, event.data.message);
        };
    });
    worker.postMessage({ id, url, credential: rest.credential, filename }, [channel.port2]);
    await registered;
    const frame = document.createElement("iframe");
    frame.hidden = true;
    frame.src = `/.console/download/${id}`;
    document.body.append(frame);
    setTimeout(() => frame.remove(), 120000);
}
