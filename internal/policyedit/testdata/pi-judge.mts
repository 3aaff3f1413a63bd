// pi-judge.ts — judges queries with the published pi-permission-system's own
// PermissionManager (its FilePolicyLoader, scope merge, composition and matcher).
// stdin: JSON lines {"agentDir","cwd","queries":[{"agent","surface","values"}]}
// stdout: one line per input, {"states":["allow"|"ask"|"deny", …]}.
// Run with ../shared/pi-peer/tsx.sh and HOME set to the tree's home.
import * as readline from "node:readline";

const SRC = `${process.env.PEER_DIR ?? "/tmp/peerenv"}/node_modules/@gotgenes/pi-permission-system/src`;
const { PermissionManager } = await import(`${SRC}/permission-manager.ts`);
const { PATH_SURFACES } = await import(`${SRC}/access-intent/path-surfaces.ts`);

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const job = JSON.parse(line);
  const m = new PermissionManager({ agentDir: job.agentDir });
  m.configureForCwd(job.cwd);
  const states = job.queries.map((q: { agent: string; surface: string; values: string[] }) => {
    const agentName = q.agent || undefined;
    const intent = PATH_SURFACES.has(q.surface)
      ? { kind: "path-values", surface: q.surface, values: q.values, agentName }
      : { kind: "tool", surface: q.surface, input: q.surface === "bash" ? { command: q.values[0] } : {}, agentName };
    return m.check(intent).state;
  });
  process.stdout.write(JSON.stringify({ states }) + "\n");
}
