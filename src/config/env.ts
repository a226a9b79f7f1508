/** Reading one environment variable: empty counts as unset; a bad value is a ConfigError naming the key. */
import { ConfigError } from "../errors.ts";

export type Env = Record<string, string | undefined>;

export function int(env: Env, key: string, def: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[key];
  if (raw === undefined || raw === "") return def;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(key, `expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(key, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function bool(env: Env, key: string, def: boolean): boolean {
  const raw = env[key]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return def;
  if (["1", "true", "on", "yes"].includes(raw)) return true;
  if (["0", "false", "off", "no"].includes(raw)) return false;
  throw new ConfigError(key, `expected on or off, got "${env[key]}"`);
}

export function str(env: Env, key: string): string | null {
  const v = env[key];
  return v === undefined || v.trim() === "" ? null : v.trim();
}
