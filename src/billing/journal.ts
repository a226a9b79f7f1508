/**
 * The settlement journal: every settlement is appended to a local file, synchronously, before the
 * request's response completes, and the file is deleted once its settlements have landed in the
 * database. A write() is in the page cache when it returns, so it survives kill -9 (not a power
 * loss: there is no fsync); measured cost in docs/billing-engine.md.
 *
 * Layout: <dataDir>/billing-journal/<boot id>/{meta.json, 000001.jsonl, …}, one settlement a line (its
 * batch entry, the JSON the batch statement reads; older versions wrote the Settlement object). One directory per
 * process incarnation; segments rotate at each flush so a landed segment is simply unlinked.
 * At boot, directories of dead processes on the same database are replayed (settlements are
 * idempotent by ref) and removed.
 *
 * A journal that cannot be written (disk full, out of file descriptors) never stops billing: the
 * error is reported and the settlement is kept in memory only, as without a journal.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { settlementOfEntry, type Settlement, type SettlementEntry } from "./settle-batch.ts";

export interface JournalMeta {
  /** the lease owner of that incarnation ("<instance id>#<boot>") */
  owner: string;
  pid: number;
  /** performance.timeOrigin of that process: tells an earlier incarnation that had our pid (pid 1 in a container) from a sibling engine in this process */
  processStart: number;
  /** identity of the database it settles into (database_identity.id) */
  database: string;
}

export class Journal {
  private fd: number | null = null;
  private seg = 0;
  private appendedToCurrent = 0;
  /** segment -> settlements appended to it and not landed yet */
  private readonly outstanding = new Map<number, number>();

  /** Throws when the directory cannot be created (the engine then runs without a journal). */
  constructor(private readonly dir: string, meta: JournalMeta, private readonly onError: (err: unknown, what: string) => void) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "meta.json"), JSON.stringify(meta));
    this.openNext();
  }

  /**
   * Append one settlement, as its batch entry (settle-batch.ts's settlementEntry: the text the batch
   * sends too) or, when it has none, as the Settlement's JSON; returns the segment it is in (pass it
   * to `landed`), 0 if it could not be written.
   */
  append(s: Settlement | SettlementEntry): number {
    if (this.fd === null) return 0;
    try {
      writeSync(this.fd, (typeof s === "string" ? s : JSON.stringify(s)) + "\n");
    } catch (e) {
      this.onError(e, "append");
      return 0;
    }
    this.appendedToCurrent++;
    this.outstanding.set(this.seg, (this.outstanding.get(this.seg) ?? 0) + 1);
    return this.seg;
  }

  /** Start a new segment (at each flush), so the settlements of the previous one can land and go. */
  rotate(): void {
    if (this.appendedToCurrent === 0) return;
    try {
      this.openNext();
    } catch (e) {
      this.onError(e, "rotate"); // keep appending to the current segment
    }
  }

  /** A settlement of segment `seg` is in the database. */
  landed(seg: number): void {
    if (seg === 0) return;
    const n = (this.outstanding.get(seg) ?? 1) - 1;
    if (n > 0) return void this.outstanding.set(seg, n);
    this.outstanding.delete(seg);
    if (seg !== this.seg) this.remove(this.segPath(seg));
  }

  /** Close; the directory is removed when every settlement landed, else kept for the next boot. */
  close(): boolean {
    try {
      if (this.fd !== null) closeSync(this.fd);
    } catch {}
    this.fd = null;
    const empty = [...this.outstanding.values()].every((n) => n === 0);
    if (empty) this.remove(this.dir, true);
    return empty;
  }

  private openNext() {
    const next = this.seg + 1;
    const fd = openSync(this.segPath(next), "a");
    const [old, oldSeg] = [this.fd, this.seg];
    [this.fd, this.seg, this.appendedToCurrent] = [fd, next, 0];
    if (old === null) return;
    try {
      closeSync(old);
    } catch {}
    if (!this.outstanding.get(oldSeg)) this.remove(this.segPath(oldSeg));
  }

  private remove(path: string, recursive = false) {
    try {
      rmSync(path, { recursive, force: true });
    } catch (e) {
      this.onError(e, "remove");
    }
  }

  private segPath(seg: number) {
    return join(this.dir, `${String(seg).padStart(6, "0")}.jsonl`);
  }
}

export interface OrphanJournal {
  meta: JournalMeta;
  settlements: Settlement[];
  /** remove the directory (its settlements landed) */
  done(): void;
  /** give it back for a later boot (replaying failed) */
  abandon(): void;
}

/**
 * Journals left by dead processes on this database, each claimed by renaming its directory (two
 * instances booting at once cannot both take one). A torn last line (killed mid-write) is skipped:
 * that request's response had not completed.
 */
export function claimOrphanJournals(root: string, database: string, alive: (pid: number) => boolean): OrphanJournal[] {
  if (!existsSync(root)) return [];
  const out: OrphanJournal[] = [];
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    let meta: JournalMeta;
    try {
      meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as JournalMeta;
    } catch {
      continue;
    }
    const claimer = /\.replay-(\d+)$/.exec(name);
    const holder = claimer ? Number(claimer[1]) : meta.pid;
    const ours = holder === process.pid && (claimer !== null || meta.processStart === performance.timeOrigin);
    if (ours || (holder !== process.pid && alive(holder))) continue;
    if (meta.database !== database) {
      // another database's: replayed by an instance of that database, unless there is nothing to replay
      // (another instance booting beside us may remove it meanwhile: a directory gone is not an error)
      try {
        if (!readdirSync(dir).some((f) => f.endsWith(".jsonl") && statSync(join(dir, f)).size > 0)) rmSync(dir, { recursive: true, force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
      continue;
    }
    const base = claimer ? name.slice(0, claimer.index) : name;
    const claimed = join(root, `${base}.replay-${process.pid}`);
    try {
      if (claimed !== dir) renameSync(dir, claimed);
    } catch {
      continue; // another instance claimed it first
    }
    const settlements: Settlement[] = [];
    for (const f of readdirSync(claimed).filter((f) => f.endsWith(".jsonl")).sort()) {
      for (const line of readFileSync(join(claimed, f), "utf8").split("\n")) {
        if (!line) continue;
        try {
          // a batch entry (short keys), or a Settlement's JSON (written by earlier versions)
          settlements.push(line.startsWith('{"a":') ? settlementOfEntry(line) : (JSON.parse(line) as Settlement));
        } catch {
          // torn write at the moment of the kill
        }
      }
    }
    out.push({
      meta,
      settlements,
      done: () => rmSync(claimed, { recursive: true, force: true }),
      abandon: () => {
        try {
          renameSync(claimed, join(root, base));
        } catch {}
      },
    });
  }
  return out;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

