/**
 * What the tests share: the live service's URL and keys from the environment (set by
 * tests/clients/test_typescript_client.py), clients built from them, and a fetch wrapper that
 * records which operation of the spec each request reached (for the route-coverage test).
 */

import { ROUTES, VikingBridgeClient, type ClientOptions, type OperationId } from "../src/index.js";

export interface LiveEnv {
  url: string;
  tenant: string;
  workspace: string;
  keys: { alice: string; aliceChild: string; carol: string; bob: string; globex: string };
  aliceToken: string;
}

/** The live environment, or the reason it is missing (tests then skip, and pytest fails on any skip). */
export function liveEnv(): LiveEnv | string {
  const e = process.env;
  const need = ["VB_URL", "VB_TENANT", "VB_WORKSPACE", "VB_KEY_ALICE", "VB_KEY_ALICE_CHILD", "VB_KEY_CAROL", "VB_KEY_BOB", "VB_KEY_GLOBEX", "VB_TOKEN_ALICE"];
  const missing = need.filter((name) => !e[name]);
  if (missing.length) return `no live service: ${missing.join(", ")} unset (run tests/clients/test_typescript_client.py)`;
  return {
    url: e.VB_URL!,
    tenant: e.VB_TENANT!,
    workspace: e.VB_WORKSPACE!,
    keys: { alice: e.VB_KEY_ALICE!, aliceChild: e.VB_KEY_ALICE_CHILD!, carol: e.VB_KEY_CAROL!, bob: e.VB_KEY_BOB!, globex: e.VB_KEY_GLOBEX! },
    aliceToken: e.VB_TOKEN_ALICE!,
  };
}

const TEMPLATES = Object.entries(ROUTES).map(([id, route]) => ({
  id: id as OperationId,
  method: route.method as string,
  pattern: new RegExp(`^${route.path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
}));

/** Which operation a (method, pathname) reaches, by the generated route table. */
export function operationOf(method: string, pathname: string): OperationId | undefined {
  return TEMPLATES.find((t) => t.method === method && t.pattern.test(pathname))?.id;
}

/** A fetch that records every operation it carried an answer for. */
export function recordingFetch(seen: Set<OperationId>): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    const op = operationOf((init?.method ?? "GET").toUpperCase(), url.pathname);
    if (op) seen.add(op);
    return response;
  };
}

export function clientFor(env: LiveEnv, key: string, extra: Partial<ClientOptions> = {}): VikingBridgeClient {
  return new VikingBridgeClient({ baseUrl: env.url, apiKey: key, ...extra });
}

export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
