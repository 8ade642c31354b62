/**
 * What the client's logger hook may see: header values that carry a credential are replaced
 * by "[REDACTED]" before any log event is built. The hook never receives a body, a query
 * string (recall text is as private as memory content) or a raw credential; this module is
 * the only place that decides what counts as one, and it errs towards redacting.
 */
export declare const REDACTED = "[REDACTED]";
export declare function isSecretHeader(name: string): boolean;
/** A copy of `headers` with every secret value replaced; names are kept (they say which kind was sent). */
export declare function redactHeaders(headers: Headers | Record<string, string>): Record<string, string>;
/** The URL's origin and path only: no userinfo, no query string, no fragment. */
export declare function redactUrl(url: URL): string;
/** Replace every occurrence of the given secrets in free text (a last wall for messages). */
export declare function scrub(text: string, secrets: readonly string[]): string;
