/**
 * deploy/: what can be tested without Docker or a running systemd. The compiled binary started the
 * way deploy/reelay.service starts it — the unit's Environment= lines, a non-root user, the whole
 * file system read-only except the state directory (/var/lib/reelay) and a private /tmp, working
 * directory / — serves every built-in model, answers its own `healthcheck`, and stops cleanly on
 * SIGTERM. The sandbox is a private mount namespace (unshare -m) with read-only remounts, and the
 * user is `nobody` (setpriv). The compose file and the load balancer config are checked for the
 * parts they must agree on.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import YAML from "yaml";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";

const root = new URL("../..", import.meta.url).pathname;
const unit = readFileSync(join(root, "deploy/reelay.service"), "utf8");
const ADMIN = "deploy-unit-admin-token-0123";
const NOBODY = 65534;

let base: string;
beforeAll(() => {
  base = mkdtempSync("/var/tmp/reelay-unit-"); // outside /tmp: the sandbox mounts its own /tmp
  chmodSync(base, 0o755);
  mkdirSync(join(base, "bin"));
  copyFileSync(compiledBinary(), join(base, "bin/reelay"));
  chmodSync(join(base, "bin/reelay"), 0o755);
  mkdirSync(join(base, "state"));
  chownSync(join(base, "state"), NOBODY, NOBODY);
  chmodSync(join(base, "state"), 0o750);
}, 300_000);
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** key=value pairs of the unit's Environment= lines */
function unitEnvironment(): Record<string, string> {
  return Object.fromEntries(unit.split("\n").filter((l) => l.startsWith("Environment=")).map((l) => {
    const [k, ...v] = l.slice("Environment=".length).split("=");
    return [k!, v.join("=")];
  }));
}
const directive = (name: string) => unit.split("\n").find((l) => l.startsWith(`${name}=`))?.slice(name.length + 1);

test("the unit runs reelay as a non-root dynamic user with a read-only system and its data in StateDirectory", () => {
  expect(directive("DynamicUser")).toBe("yes");
  expect(directive("User")).toBeUndefined();
  expect(directive("ProtectSystem")).toBe("strict");
  expect(directive("PrivateTmp")).toBe("yes");
  expect(directive("StateDirectory")).toBe("reelay");
  expect(unitEnvironment().REELAY_DATA_DIR).toBe("/var/lib/reelay"); // = /var/lib + StateDirectory
  expect(directive("WorkingDirectory")).toBe("/");
  expect(directive("ExecStart")).toBe("/usr/local/bin/reelay serve");
  // systemd's own checker, where systemd is installed: the unit parses, every directive is known
  if (Bun.which("systemd-analyze")) {
    const copy = join(base, "reelay.service");
    writeFileSync(copy, unit.replace("ExecStart=/usr/local/bin/reelay", `ExecStart=${join(base, "bin/reelay")}`));
    const r = Bun.spawnSync(["systemd-analyze", "verify", "--man=no", copy]);
    expect(r.stderr.toString() + r.stdout.toString()).toBe("");
    expect(r.exitCode).toBe(0);
  }
});

test("started like the unit (nobody, / read-only, only /var/lib/reelay and /tmp writable): serves embeddings, chat and video, then stops on SIGTERM", async () => {
  const port = freePort();
  const env = { ...unitEnvironment(), PATH: "/usr/bin:/bin", PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN };
  const sandbox = [
    "set -e",
    "mount --bind / /",
    "mount -t tmpfs -o mode=0755 tmpfs /var/lib",
    "mkdir /var/lib/reelay",
    `mount --bind ${base}/state /var/lib/reelay`,
    "mount -o remount,ro /var/lib",
    "mount -t tmpfs -o mode=1777 tmpfs /tmp",
    "mount -o remount,bind,ro /",
    "cd /",
    `exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups env -i ${Object.entries(env).map(([k, v]) => `${k}='${v}'`).join(" ")} ${base}/bin/reelay serve`,
  ].join("\n");
  const log = join(base, "serve.log");
  const proc = Bun.spawn(["unshare", "-m", "--propagation", "private", "sh", "-c", sandbox], { stdout: Bun.file(log), stderr: Bun.file(log + ".err") });
  const output = () => (existsSync(log) ? readFileSync(log, "utf8") : "") + (existsSync(log + ".err") ? readFileSync(log + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  const admin = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
  try {
    await waitForOwnListener(proc, port, output, 90_000);
    // the process runs as nobody, in /
    const status = readFileSync(`/proc/${proc.pid}/status`, "utf8");
    expect(/Uid:\s+(\d+)/.exec(status)![1]).toBe(String(NOBODY));
    expect(readlinkSync(`/proc/${proc.pid}/cwd`)).toBe("/");
    const hc = Bun.spawnSync([join(base, "bin/reelay"), "healthcheck"], { env: { PORT: String(port), HOST: "0.0.0.0", PATH: "/usr/bin:/bin" } });
    expect(hc.exitCode).toBe(0);

    const account = await admin("/admin/accounts", { name: "unit", credits: 5_000_000 });
    const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "unit" });
    const call = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const emb = await call("/v1/embeddings", { model: "use-lite", input: ["a read-only root", "works fine"] });
    expect(emb.status).toBe(200);
    expect(((await emb.json()) as any).data).toHaveLength(2);
    // the local chat model writes its native libraries to the private /tmp
    const chat = await call("/v1/chat/completions", { model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8 });
    expect(chat.status).toBe(200);
    const png = Buffer.from((await import("fast-png")).encode({ width: 32, height: 32, data: new Uint8Array(32 * 32 * 3).fill(120), channels: 3 })).toString("base64");
    const job = (await (await call("/v1/videos/generations", { model: "preview-motion", prompt: "zoom in", seconds: 1, size: "624x624", image: png })).json()) as any;
    let polled: any;
    for (let i = 0; i < 240; i++) {
      polled = await (await fetch(`${url}/v1/videos/generations/${job.id}`, { headers: { authorization: `Bearer ${key}` } })).json();
      if (polled.status === "completed" || polled.status === "failed") break;
      await Bun.sleep(250);
    }
    expect(polled.status).toBe("completed");
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
  expect(output()).toContain('"msg":"stopped"');
  // everything it kept is in the state directory: the PGlite data dir, owned by the service user
  expect(readdirSync(join(base, "state"))).toContain("PG_VERSION");
}, 240_000);

test("compose: two reelay instances behind the load balancer, sharing Postgres and Redis, read-only, non-root image", () => {
  const compose = YAML.parse(readFileSync(join(root, "deploy/compose.yaml"), "utf8"), { merge: true }); // compose applies `<<:` merge keys
  const reelays = Object.entries<any>(compose.services).filter(([, s]) => s.build?.dockerfile === "deploy/Dockerfile");
  expect(reelays.map(([name]) => name).sort()).toEqual(["reelay-1", "reelay-2"]);
  for (const [, s] of reelays) {
    expect(s.environment.DATABASE_URL).toStartWith("postgres://");
    expect(s.environment.DATABASE_URL).toContain("@postgres:5432/");
    expect(s.environment.REDIS_URL).toBe("redis://redis:6379");
    expect(s.read_only).toBe(true);
    expect(s.deploy.resources.limits.memory).toBeDefined();
  }
  expect(new Set(reelays.map(([, s]) => s.environment.REELAY_INSTANCE_ID)).size).toBe(2);
  expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(["lb", "postgres", "redis"]));
  const haproxy = readFileSync(join(root, "deploy/haproxy.cfg"), "utf8");
  for (const [name] of reelays) expect(haproxy).toMatch(new RegExp(`server ${name} ${name}:8080 check`));
  expect(haproxy).toContain("option httpchk GET /readyz");
  const dockerfile = readFileSync(join(root, "deploy/Dockerfile"), "utf8");
  expect(dockerfile).toMatch(/^USER reelay/m);
  expect(dockerfile).toMatch(/^VOLUME \["\/var\/lib\/reelay"\]/m);
  expect(dockerfile).toContain("bash compile.sh");
  expect(dockerfile).toMatch(/^FROM debian:bookworm-slim$/m);
});
