/**
 * What the client's logger hook may see: header values that carry a credential are replaced
 * by "[REDACTED]" before any log event is built. The hook never receives a body, a query
 * string (recall text is as private as memory content) or a raw credential; this module is
 * the only place that decides what counts as one, and it errs towards redacting.
 */
export const REDACTED = "[REDACTED]";
/** Exact header names that always carry a credential or a signature. */
const SECRET_HEADERS = new Set([
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "set-cookie",
    "x-vb-signature",
]);
/** Any header whose name mentions one of these is treated as secret too. */
const SECRET_WORDS = ["auth", "key", "token", "secret", "signature", "password", "cookie", "session"];
export function isSecretHeader(name) {
    const lower = name.toLowerCase();
    return SECRET_HEADERS.has(lower) || SECRET_WORDS.some((word) => lower.includes(word)) || lower.startsWith("x-vb-");
}
/** A copy of `headers` with every secret value replaced; names are kept (they say which kind was sent). */
export function redactHeaders(headers) {
    const out = {};
    const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
    for (const [name, value] of entries)
        out[name.toLowerCase()] = isSecretHeader(name) ? REDACTED : value;
    return out;
}
/** The URL's origin and path only: no userinfo, no query string, no fragment. */
export function redactUrl(url) {
    return `${url.protocol}//${url.host}${url.pathname}`;
}
/** Replace every occurrence of the given secrets in free text (a last wall for messages). */
export function scrub(text, secrets) {
    let out = text;
    for (const secret of secrets)
        if (secret.length >= 4)
            out = out.split(secret).join(REDACTED);
    return out;
}
