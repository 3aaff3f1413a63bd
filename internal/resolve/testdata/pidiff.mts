// pidiff.mts — pi's side of TestDifferentialAgainstPi (pidiff_test.go), run by
// ../shared/pi-peer/tsx.sh. Judges each case with the published 20.7.3
// package's own PermissionManager, ConfigStore (yoloMode from the global,
// legacy and project files) and PermissionResolver, on the files the Go side
// laid out, through the serving node's buildAccessIntentForSurface.
// stdin: JSON lines {id, agentDir, cwd, home, surface, value}; stdout: {id, state}.
import { createInterface } from "node:readline";
const SRC = `${process.env.PEER_DIR}/node_modules/@gotgenes/pi-permission-system/src`;
const pkg = (p: string) => import(`${SRC}/${p}.ts`);
const { buildAccessIntentForSurface } = await pkg("access-intent/input-normalizer");
const { PermissionManager } = await pkg("permission-manager");
const { PermissionResolver } = await pkg("permission-resolver");
const { SessionRules } = await pkg("session-rules");
const { ConfigStore } = await pkg("config-store");
const { isYoloModeEnabled } = await pkg("extension-config");
const { pathFlavorForPlatform } = await pkg("path/path-flavor");
const flavor = pathFlavorForPlatform(process.platform);
const logger = { debug() {}, warn() {}, review() {} };
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  process.env.HOME = c.home;
  let configStore: any;
  const manager = new PermissionManager({ agentDir: c.agentDir, flavor, isYoloEnabled: () => isYoloModeEnabled(configStore.current()) });
  configStore = new ConfigStore({ agentDir: c.agentDir, policyPaths: manager, logger });
  configStore.refresh({ cwd: c.cwd, hasUI: false, ui: { notify() {} } });
  manager.configureForCwd(c.cwd);
  const resolver = new PermissionResolver(manager, new SessionRules());
  let state: string;
  try {
    state = resolver.resolve(buildAccessIntentForSurface(c.surface, c.value ?? undefined, null, undefined)).state;
  } catch (e) {
    state = "error:" + String(e);
  }
  process.stdout.write(JSON.stringify({ id: c.id, state }) + "\n");
}
