// The console's export: answers /.console/download/ID, registered by the page with the REST URL and
// the credential, by streaming that GET to the browser's download (the body is never held whole).

const downloads = new Map();

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("message", (event) => {
    const { id, url, credential, filename } = event.data;
    const port = event.ports[0];
    downloads.set(id, { url, credential, filename, port });
    port.postMessage("registered");
});

self.addEventListener("fetch", (event) => {
    const match = new URL(event.request.url).pathname.match(/^\/\.console\/download\/([0-9a-f]{32})$/);
    if (!match) return;
    const download = downloads.get(match[1]);
    downloads.delete(match[1]);
    if (!download) {
        event.respondWith(new Response("This download was started already.", { status: 410 }));
        return;
    }
    event.respondWith(stream(download));
});

async function stream({ url, credential, filename, port }) {
    const headers = credential ? { Authorization: `Bearer ${credential}` } : {};
    let upstream;
    try {
        upstream = await fetch(url, { headers, cache: "no-store" });
    } catch (error) {
        port.postMessage({ status: 0, message: String(error) });
        return new Response("The server could not be reached.", { status: 502 });
    }
    if (!upstream.ok) {
        const text = await upstream.text();
        let message = text;
        try {
            message = JSON.parse(text).error || text;
        } catch {
            // Not JSON: the text as it came.
        }
        port.postMessage({ status: upstream.status, message });
        return new Response(message, { status: upstream.status });
    }
    port.postMessage({ status: upstream.status, message: "" });
    const answer = new Headers({
        "Content-Type": "application/json; charset=utf-8",
        "Content-Disposition": `attachment; filename*=UTF-8''${encodeURIComponent(filename)}`,
        "X-Content-Type-Options": "nosniff",
    });
    const length = upstream.headers.get("Content-Length");
    if (length) answer.set("Content-Length", length);
    return new Response(upstream.body, { status: 200, headers: answer });
}
