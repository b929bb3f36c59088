// Paths, values and orderings as the Realtime Database defines them (Docs: PROTOCOL.md).

const MAX_KEY_BYTES = 768;
const MAX_DEPTH = 32;
const utf8 = new TextEncoder();

/** Why a key is not one; null when it is. */
export function keyProblem(key) {
    if (key.length === 0) return "a key cannot be empty";
    if (utf8.encode(key).length > MAX_KEY_BYTES) return `a key is at most ${MAX_KEY_BYTES} bytes`;
    if (/[.$#[\]/\u0000-\u001f\u007f]/.test(key)) {
        return "a key cannot contain . $ # [ ] / or control characters";
    }
    return null;
}

/** A path string ("/users/ada", leading, trailing and double slashes ignored) as its keys. */
export function parsePath(text) {
    const keys = text.split("/").filter((key) => key.length > 0);
    for (const key of keys) {
        const problem = keyProblem(key);
        if (problem) throw new Error(`"${key}": ${problem}`);
    }
    if (keys.length > MAX_DEPTH) throw new Error(`a path is at most ${MAX_DEPTH} keys deep`);
    return keys;
}

export function pathString(keys) {
    return "/" + keys.join("/");
}

/** Whether `prefix` is `path` or one of its ancestors. */
export function isPrefix(prefix, path) {
    if (prefix.length > path.length) return false;
    for (let i = 0; i < prefix.length; i++) if (prefix[i] !== path[i]) return false;
    return true;
}

export function isObject(value) {
    return value !== null && typeof value === "object";
}

/** Whether `value` is a leaf with a priority, as exports write it: {".value": v, ".priority": p}. */
function isWrappedLeaf(value) {
    return isObject(value) && Object.prototype.hasOwnProperty.call(value, ".value");
}

/** The value of a node for display: a leaf's value, or the object itself; null for no data. */
export function nodeValue(value) {
    if (value === undefined) return null;
    return isWrappedLeaf(value) ? value[".value"] : value;
}

/** A node's priority, or null. */
export function priorityOf(value) {
    if (!isObject(value)) return null;
    const priority = value[".priority"];
    return priority === undefined ? null : priority;
}

/** Whether the node has children (an object that is not a wrapped leaf). */
export function hasChildren(value) {
    return isObject(value) && !isWrappedLeaf(value);
}

/** The child keys of a node (not `.priority`), unsorted. */
export function childKeys(value) {
    if (!hasChildren(value)) return [];
    return Object.keys(value).filter((key) => key !== ".priority");
}

/** The value at `keys` below `value`; undefined when absent. */
export function childAt(value, keys) {
    let node = value;
    for (const key of keys) {
        if (!hasChildren(node)) return undefined;
        node = node[key];
        if (node === undefined) return undefined;
    }
    return node;
}

/**
 * `root` with `newValue` at `keys`, leaving `root` untouched (objects along the path are copied);
 * null or undefined removes, and an object left empty is removed too.
 */
export function setAt(root, keys, newValue, depth = 0) {
    if (depth === keys.length) return newValue === undefined || isEmptyObject(newValue) ? null : newValue;
    const copy = hasChildren(root) ? { ...root } : {};
    const child = setAt(copy[keys[depth]], keys, newValue, depth + 1);
    if (child === null) delete copy[keys[depth]];
    else copy[keys[depth]] = child;
    return childKeys(copy).length === 0 ? null : copy;
}

function isEmptyObject(value) {
    return isObject(value) && Object.keys(value).length === 0;
}

/** Whether two JSON values are equal, giving up (false) after `budget` nodes. */
export function sameValue(a, b, budget = { left: 2000 }) {
    if (a === b) return true;
    if (!isObject(a) || !isObject(b)) return false;
    const keysA = Object.keys(a);
    if (keysA.length !== Object.keys(b).length) return false;
    budget.left -= keysA.length;
    if (budget.left < 0) return false;
    for (const key of keysA) {
        if (!Object.prototype.hasOwnProperty.call(b, key)) return false;
        if (!sameValue(a[key], b[key], budget)) return false;
    }
    return true;
}

// Orderings.

const INT_KEY = /^-?0*\d{1,10}$/;

function intKey(key) {
    if (!INT_KEY.test(key)) return null;
    const number = Number(key);
    return number >= -2147483648 && number <= 2147483647 ? number : null;
}

function compareStrings(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
}

/** Key order: 32-bit integer keys first, numerically (shorter first on a tie), then strings. */
export function compareKeys(a, b) {
    if (a === b) return 0;
    const ia = intKey(a);
    const ib = intKey(b);
    if (ia !== null && ib !== null) return ia - ib || a.length - b.length;
    if (ia !== null) return -1;
    if (ib !== null) return 1;
    return compareStrings(a, b);
}

function typeRank(value) {
    if (value === null || value === undefined) return 0;
    if (value === false) return 1;
    if (value === true) return 2;
    if (typeof value === "number") return 3;
    if (typeof value === "string") return 4;
    return 5;
}

/** Value order: null < false < true < numbers < strings < objects. */
export function compareValues(a, b) {
    const ra = typeRank(a);
    const rb = typeRank(b);
    if (ra !== rb) return ra - rb;
    if (ra === 3) return a - b;
    if (ra === 4) return compareStrings(a, b);
    return 0;
}

function comparePriorities(a, b) {
    const rank = (p) => (p === null ? 0 : typeof p === "number" ? 1 : 2);
    const ra = rank(a);
    const rb = rank(b);
    if (ra !== rb) return ra - rb;
    if (ra === 1) return a - b;
    if (ra === 2) return compareStrings(a, b);
    return 0;
}

/**
 * A comparator of [key, node] entries for an ordering: {by: "key" | "value" | "priority" | "child",
 * child: "a/b"}; ties broken by key.
 */
export function entryComparator(ordering) {
    const byKey = (a, b) => compareKeys(a[0], b[0]);
    switch (ordering?.by) {
        case "value":
            return (a, b) => compareValues(indexedValue(a[1]), indexedValue(b[1])) || byKey(a, b);
        case "priority":
            return (a, b) => comparePriorities(priorityOf(a[1]), priorityOf(b[1])) || byKey(a, b);
        case "child": {
            const keys = ordering.child.split("/").filter((key) => key);
            return (a, b) =>
                compareValues(indexedValue(childAt(a[1], keys)), indexedValue(childAt(b[1], keys))) || byKey(a, b);
        }
        default:
            return byKey;
    }
}

function indexedValue(node) {
    const value = nodeValue(node);
    return hasChildren(value) ? {} : value;
}

// Push ids, generated as Firebase's clients make them.

const PUSH_CHARS = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
let lastPushTime = 0;
const lastRandom = [];

/** A push id for the time `now` (milliseconds, the server's clock): sorts in creation order. */
export function pushID(now) {
    const sameMillisecond = now === lastPushTime;
    lastPushTime = now;
    const timeChars = new Array(8);
    let time = now;
    for (let i = 7; i >= 0; i--) {
        timeChars[i] = PUSH_CHARS.charAt(time % 64);
        time = Math.floor(time / 64);
    }
    if (!sameMillisecond) {
        const random = crypto.getRandomValues(new Uint8Array(12));
        for (let i = 0; i < 12; i++) lastRandom[i] = random[i] % 64;
    } else {
        let i = 11;
        for (; i >= 0 && lastRandom[i] === 63; i--) lastRandom[i] = 0;
        if (i >= 0) lastRandom[i]++;
    }
    return timeChars.join("") + lastRandom.map((n) => PUSH_CHARS.charAt(n)).join("");
}

// Display.

/** The type name of a leaf value: string, number, boolean or null. */
export function leafType(value) {
    if (value === null || value === undefined) return "null";
    return typeof value;
}

/** A leaf as one line of text: strings quoted, the others as JSON writes them. */
export function leafText(value) {
    if (typeof value === "string") return JSON.stringify(value);
    if (value === null || value === undefined) return "null";
    return String(value);
}

/** Reads a value typed in a query field: JSON when it parses as a primitive, else the text itself. */
export function typedBound(text) {
    try {
        const parsed = JSON.parse(text);
        if (!isObject(parsed)) return parsed;
    } catch {
        // Not JSON: the text is the string.
    }
    return text;
}
