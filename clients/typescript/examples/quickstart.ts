/**
 * The README's "Use it from TypeScript" snippet, as a function the tests run against a live
 * service (test/plugin.test.ts); test/readme.test.ts checks the READMEs quote the region
 * between the markers verbatim.
 */

// #region readme
import { NotFoundError, VikingBridgeClient } from "@viking-bridge/client";
import { CodingMemoryPlugin } from "./coding-agent-plugin.js";

export async function quickstart(baseUrl: string, apiKey: string, repoDir: string): Promise<string> {
  // who is asking comes from the key (`viking-bridge keys issue ...`), never from a parameter
  const client = new VikingBridgeClient({ baseUrl, apiKey, logger: (e) => console.debug(e.event, e.operation, e.url) });
  const note = await client.remember({ content: "I prefer small, reviewable PRs", kind: "preference" });
  const { memories, context } = await client.recall({ query: "how do I like my PRs?", purpose: "coding" });
  console.log(memories.length, "memories; context for the prompt:\n" + context);
  await client.forget({ scope: note.scope, memoryId: note.memory_id });
  try {
    await client.getMemory({ scope: note.scope, memoryId: note.memory_id });
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e; // 404: forgotten (typed errors: ForbiddenError, ConflictError, ...)
  }
  // the coding-agent plugin: workspace id from the repository's git remote, checked against the key
  const plugin = new CodingMemoryPlugin({ client, repoDir, agentId: "coding-agent" });
  await plugin.recordDecision("payments: amounts are integers of minor units");
  return (await plugin.beforeTask("how are amounts stored?")).context;
}
// #endregion readme
