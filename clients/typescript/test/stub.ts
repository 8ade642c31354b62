/** A tiny local HTTP server answering from a script, for the sequences the real service rarely sends (503, 429). */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Reply = { status: number; headers?: Record<string, string>; body?: unknown };

export async function stub(replies: Reply[]): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  let i = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const reply = replies[Math.min(i++, replies.length - 1)];
      const json = reply.body === undefined ? "" : JSON.stringify(reply.body);
      const type = reply.status >= 400 ? "application/problem+json" : "application/json";
      res.writeHead(reply.status, { "content-type": type, ...(reply.headers ?? {}) });
      res.end(json);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export const problem = (status: number, slug: string, extra: Record<string, unknown> = {}) => ({
  type: `urn:viking-bridge:problem:${slug}`,
  title: slug,
  status,
  detail: `${slug} (test stub)`,
  request_id: "stub",
  ...extra,
});

export const WRITE = { memory_id: "m1", scope: "t/user/u", visibility: "private", kind: "note", status: "active", reason: "stub", deduplicated: false };
