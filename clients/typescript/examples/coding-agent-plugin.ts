/**
 * A small coding-agent memory plugin on @viking-bridge/client (seed 003's coding agent).
 *
 * The workspace is the repository the agent works in, named after its git remote — so two
 * clones of one repository share their project memory and two repositories never do. The
 * plugin never *chooses* the workspace: the credential names it (the service takes identity
 * only from the credential). The derived id is used to check that the credential fits the
 * repository — recall must have searched `<tenant>/ws/<id>`, and every capture asserts it as
 * `team_id` (the service refuses a mismatch with 403) — so an agent started in the wrong
 * checkout stops instead of writing one project's decisions into another's memory.
 */

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";

import { VikingBridgeClient, type Schemas } from "../src/index.js";

/**
 * `host/path` of a git remote, lower-cased, without scheme, credentials, port or `.git`:
 * `git@github.com:Acme/Payments.git`, `https://tok@github.com/acme/payments` and
 * `ssh://git@github.com:22/acme/payments.git` are all `github.com/acme/payments`.
 */
export function normalizeRemote(remote: string): string {
  let text = remote.trim();
  const scp = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/)(.+)$/.exec(text); // git@host:owner/repo (scp-like)
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    text = `${scp[1]}/${scp[2]}`;
  } else {
    const url = new URL(text); // throws on anything that is neither a URL nor scp-like
    text = url.protocol === "file:" ? `local${url.pathname}` : `${url.hostname}${url.pathname}`;
  }
  return text.toLowerCase().replace(/\/+$/, "").replace(/\.git$/, "").replace(/\/{2,}/g, "/");
}

/** A readable id: a subset of the service's grammar (identity/ids.py) — no `%` (a percent-encoded path hashes instead). */
const ID = /^[a-z0-9_][a-z0-9_\-.@+=~]{0,127}$/;

/**
 * The workspace id for a git remote: the normalised `host/owner/repo` with `/` as `~`
 * (`github.com~acme~payments`), or `git-<sha256>` when that would not be a valid id.
 */
export function workspaceIdFromRemote(remote: string): string {
  const normalized = normalizeRemote(remote);
  const readable = normalized.replace(/\//g, "~");
  if (ID.test(readable) && !readable.includes("..") && !readable.endsWith(".")) return readable;
  return `git-${createHash("sha256").update(normalized).digest("hex").slice(0, 32)}`;
}

/** The workspace id of the repository at `dir`, from its `origin` remote (git, no shell). */
export function workspaceIdForRepo(dir: string, remoteName = "origin"): string {
  const remote = execFileSync("git", ["-C", dir, "remote", "get-url", remoteName], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return workspaceIdFromRemote(remote);
}

export class WorkspaceMismatchError extends Error {
  override name = "WorkspaceMismatchError";
}

export interface CodingMemoryPluginOptions {
  client: VikingBridgeClient;
  /** The repository the agent works in. */
  repoDir: string;
  /** The agent id the credential names (asserted on capture; the service checks it). */
  agentId?: string;
  budgetTokens?: number;
}

/** The plugin's hooks: context before a task, decisions during it, the transcript after it. */
export class CodingMemoryPlugin {
  readonly workspaceId: string;
  readonly #client: VikingBridgeClient;
  readonly #agentId: string | undefined;
  readonly #budget: number;
  #verified = false;

  constructor(options: CodingMemoryPluginOptions) {
    this.workspaceId = workspaceIdForRepo(options.repoDir);
    this.#client = options.client;
    this.#agentId = options.agentId;
    this.#budget = options.budgetTokens ?? 1500;
  }

  /** Before a task: the labelled coding context (project decisions first, seed 003's coding order). */
  async beforeTask(task: string): Promise<Schemas["RecallResponse"]> {
    const recalled = await this.#client.recall({ query: task, purpose: "coding", budget_tokens: this.#budget, agent_id: this.#agentId });
    if (!recalled.scopes_searched.some((scope) => scope.endsWith(`/ws/${this.workspaceId}`))) {
      throw new WorkspaceMismatchError(`the credential's workspace is not ${this.workspaceId} (this repository); use a key issued for it`);
    }
    this.#verified = true;
    return recalled;
  }

  /** A project decision, for everyone working in this repository. */
  async recordDecision(text: string): Promise<Schemas["WriteResult"]> {
    if (!this.#verified) await this.beforeTask(text); // never write before the workspace is confirmed
    return this.#client.remember({ content: text, kind: "decision", visibility: "workspace", metadata: { source: "coding-agent-plugin" } });
  }

  /** After a turn: the conversation, captured with the workspace asserted (403 if the key names another). */
  async afterTurn(messages: Schemas["Message"][]): Promise<Schemas["CaptureResult"]> {
    return this.#client.capture({ messages, team_id: this.workspaceId, agent_id: this.#agentId });
  }
}
