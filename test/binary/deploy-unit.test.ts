/**
 * deploy/: what can be tested without Docker or a running systemd. The compiled binary started the
 * way deploy/reelay.service starts it — the unit's Environment= lines, a non-root user, the whole
 * file system read-only except the state directory (/var/lib/reelay) and a private /tmp, working
 * directory / — serves every built-in model, answers its own `healthcheck`, and stops cleanly on
 * SIGTERM. The same binary with /tmp mounted as deploy/compose.yaml has Docker mount it (Docker's
 * tmpfs defaults, then the compose entry's options) serves the local chat model, whose llama.cpp
 * libraries are loaded from $TMPDIR; on a noexec /tmp that model fails with a message saying so and
 * the others still serve. The sandbox is a private mount namespace (unshare -m) with read-only
 * remounts, and the user is `nobody` (setpriv). The compose file, the load balancer config and
 * .dockerignore are checked for the parts they must agree on.
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

/** Docker's options for a `tmpfs:` mount before the entry's own (mount(8): a later option wins) */
const DOCKER_TMPFS_DEFAULTS = ["rw", "noexec", "nosuid", "nodev"];
const compose = YAML.parse(readFileSync(join(root, "deploy/compose.yaml"), "utf8"), { merge: true }); // compose applies `<<:` merge keys
const composeReelays = Object.entries<any>(compose.services).filter(([, s]) => s.build?.dockerfile === "deploy/Dockerfile");
/** the options of a reelay service's /tmp tmpfs in deploy/compose.yaml ("/tmp:exec,size=…" → ["exec", "size=…"]) */
function composeTmpOptions(service: any): string[] {
  const entries: string[] = [service.tmpfs ?? []].flat();
  const tmp = entries.find((e) => e.split(":")[0] === "/tmp");
  if (!tmp) throw new Error("compose: no tmpfs entry for /tmp");
  return tmp.includes(":") ? tmp.slice(tmp.indexOf(":") + 1).split(",") : [];
}

let starts = 0;
/**
 * The binary as a service manager starts it: a private mount namespace (unshare -m) where / is
 * read-only, /var/lib/reelay is a fresh state directory owned by `nobody`, /tmp is a tmpfs mounted
 * with `tmpOptions`; user nobody, working directory /, only the unit's Environment= lines.
 */
async function startSandboxed(tmpOptions: string) {
  const state = join(base, `state-${++starts}`);
  mkdirSync(state);
  chownSync(state, NOBODY, NOBODY);
  chmodSync(state, 0o750);
  const port = freePort();
  const env = { ...unitEnvironment(), PATH: "/usr/bin:/bin", PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN };
  const sandbox = [
    "set -e",
    "mount --bind / /",
    "mount -t tmpfs -o mode=0755 tmpfs /var/lib",
    "mkdir /var/lib/reelay",
    `mount --bind ${state} /var/lib/reelay`,
    "mount -o remount,ro /var/lib",
    `mount -t tmpfs -o ${tmpOptions} tmpfs /tmp`,
    "mount -o remount,bind,ro /",
    "cd /",
    `exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups env -i ${Object.entries(env).map(([k, v]) => `${k}='${v}'`).join(" ")} ${base}/bin/reelay serve`,
  ].join("\n");
  const log = join(base, `serve-${starts}.log`);
  const proc = Bun.spawn(["unshare", "-m", "--propagation", "private", "sh", "-c", sandbox], { stdout: Bun.file(log), stderr: Bun.file(log + ".err") });
  const output = () => (existsSync(log) ? readFileSync(log, "utf8") : "") + (existsSync(log + ".err") ? readFileSync(log + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForOwnListener(proc, port, output, 90_000);
  } catch (e) {
    proc.kill("SIGKILL");
    throw e;
  }
  const admin = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
  const account = await admin("/admin/accounts", { name: "unit", credits: 5_000_000 });
  const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "unit" });
  const call = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  /** the options /tmp is really mounted with, as the process sees it */
  const tmpMount = () => {
    const line = readFileSync(`/proc/${proc.pid}/mountinfo`, "utf8").split("\n").filter((l) => l.split(" ")[4] === "/tmp").at(-1)!;
    return line.split(" ")[5]!.split(",");
  };
  return { proc, port, url, state, key, call, output, tmpMount };
}
const story = { model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8 };

test("started like the unit (nobody, / read-only, only /var/lib/reelay and /tmp writable): serves embeddings, chat and video, then stops on SIGTERM", async () => {
  // systemd's PrivateTmp= is a fresh directory with the host /tmp's mount options (exec)
  const { proc, port, url, state, key, call, output } = await startSandboxed("mode=1777");
  try {
    // the process runs as nobody, in /
    const status = readFileSync(`/proc/${proc.pid}/status`, "utf8");
    expect(/Uid:\s+(\d+)/.exec(status)![1]).toBe(String(NOBODY));
    expect(readlinkSync(`/proc/${proc.pid}/cwd`)).toBe("/");
    const hc = Bun.spawnSync([join(base, "bin/reelay"), "healthcheck"], { env: { PORT: String(port), HOST: "0.0.0.0", PATH: "/usr/bin:/bin" } });
    expect(hc.exitCode).toBe(0);

    const emb = await call("/v1/embeddings", { model: "use-lite", input: ["a read-only root", "works fine"] });
    expect(emb.status).toBe(200);
    expect(((await emb.json()) as any).data).toHaveLength(2);
    // the local chat model writes its native libraries to the private /tmp
    const chat = await call("/v1/chat/completions", story);
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
  expect(readdirSync(state)).toContain("PG_VERSION");
}, 240_000);

test("compose: two reelay instances behind the load balancer, sharing Postgres and Redis, read-only, non-root image, /tmp allows executing", () => {
  expect(composeReelays.map(([name]) => name).sort()).toEqual(["reelay-1", "reelay-2"]);
  for (const [, s] of composeReelays) {
    expect(s.environment.DATABASE_URL).toStartWith("postgres://");
    expect(s.environment.DATABASE_URL).toContain("@postgres:5432/");
    expect(s.environment.REDIS_URL).toBe("redis://redis:6379");
    expect(s.read_only).toBe(true);
    expect(s.deploy.resources.limits.memory).toBeDefined();
    // Docker mounts a tmpfs noexec unless the entry says exec (its options come after the defaults)
    const effective = [...DOCKER_TMPFS_DEFAULTS, ...composeTmpOptions(s)];
    expect(effective.findLast((o) => o === "exec" || o === "noexec")).toBe("exec");
  }
  expect(new Set(composeReelays.map(([, s]) => s.environment.REELAY_INSTANCE_ID)).size).toBe(2);
  expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(["lb", "postgres", "redis"]));
  const haproxy = readFileSync(join(root, "deploy/haproxy.cfg"), "utf8");
  for (const [name] of composeReelays) expect(haproxy).toMatch(new RegExp(`server ${name} ${name}:8080 check`));
  expect(haproxy).toContain("option httpchk GET /readyz");
  const dockerfile = readFileSync(join(root, "deploy/Dockerfile"), "utf8");
  expect(dockerfile).toMatch(/^USER reelay/m);
  expect(dockerfile).toMatch(/^VOLUME \["\/var\/lib\/reelay"\]/m);
  expect(dockerfile).toContain("bash compile.sh");
  expect(dockerfile).toMatch(/^FROM debian:bookworm-slim$/m);
});

test(".dockerignore keeps host state out of the image: `COPY . .` comes after `npm ci`", () => {
  const dockerfile = readFileSync(join(root, "deploy/Dockerfile"), "utf8");
  expect(dockerfile.indexOf("COPY . .")).toBeGreaterThan(dockerfile.indexOf("RUN npm ci"));
  const ignored = readFileSync(join(root, ".dockerignore"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  // the host's install (another platform's native modules) and build output, the repository, local data
  expect(ignored).toEqual(expect.arrayContaining(["node_modules", "**/node_modules", ".git", "dist", "data", "console/dist", "test-output", "deploy/reelay.env"]));
  // and everything git ignores: it is the host's, not the source's
  const gitignored = readFileSync(join(root, ".gitignore"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  for (const pattern of gitignored) expect(ignored).toContain(pattern.replace(/^\//, "").replace(/\/$/, ""));
});

test("started like a compose service (/tmp a tmpfs with Docker's defaults and the compose entry's options): the local chat model loads and answers", async () => {
  const options = [...DOCKER_TMPFS_DEFAULTS, ...composeTmpOptions(composeReelays[0]![1])];
  const { proc, call, tmpMount } = await startSandboxed(options.join(","));
  try {
    expect(tmpMount()).not.toContain("noexec");
    const chat = await call("/v1/chat/completions", story);
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as any).usage.completion_tokens).toBe(8);
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
}, 180_000);

test("on a noexec /tmp (a plain `tmpfs: [/tmp]` in compose) the local chat model fails with a message that names TMPDIR and the fix; the other models serve", async () => {
  const { proc, url, call, tmpMount } = await startSandboxed([...DOCKER_TMPFS_DEFAULTS, "mode=1777"].join(","));
  try {
    expect(tmpMount()).toContain("noexec");
    const chat = await call("/v1/chat/completions", story);
    expect(chat.status).toBe(503);
    const { error } = (await chat.json()) as any;
    expect(error).toMatchObject({ type: "service_unavailable", code: "model_unavailable" });
    expect(error.message).toContain("llama.cpp cannot be loaded from TMPDIR (/tmp)");
    expect(error.message).toContain("mounted noexec?");
    expect(error.message).toContain('tmpfs "/tmp:exec"');
    const ready = (await (await fetch(url + "/readyz")).json()) as any;
    expect(ready.models.find((m: any) => m.id === "stories260k")).toMatchObject({ state: "failed", error: expect.stringContaining("TMPDIR") });
    const emb = await call("/v1/embeddings", { model: "use-lite", input: "still served" });
    expect(emb.status).toBe(200);
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
}, 180_000);
