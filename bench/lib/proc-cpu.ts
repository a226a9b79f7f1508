/** CPU time a process has used so far (user + system, all threads), from /proc/<pid>/stat. */
import { readFileSync } from "node:fs";

/** USER_HZ: the unit of utime/stime; 100 on every Linux this runs on (getconf CLK_TCK) */
const TICKS_PER_SECOND = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // fields after the ")" that ends the command name: state is field 3, utime 14, stime 15
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}
