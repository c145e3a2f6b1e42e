// Snapshots of the ledger state, so a restart does not replay (and re-verify the signatures of) the
// whole journal. A snapshot is the state after the journal's first `journalBytes` bytes; a restart
// loads it and replays only the entries after that offset. The journal stays the source of truth:
// a snapshot that does not match it (another journal, a shorter file, an unreadable or older format)
// is ignored and the journal is replayed from genesis, which gives the same state.
//
// Format: Node's structured clone serialisation (node:v8), which keeps Map, Set, bigint, typed
// arrays and shared references (records and recordsByNs hold the same objects) without a
// hand-written codec. Written to a temp file and renamed, so a crash mid-write leaves the old one.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import type { LedgerState } from './state.js';

export const SNAPSHOT_VERSION = 1;
/** Bytes of journal before the snapshot's offset hashed to recognise the journal it was taken of. */
const TAIL_BYTES = 4096;

/** The LedgerState fields that hold data (the class's methods are not serialised). */
export type StateData = Pick<
  LedgerState,
  'accounts' | 'tokens' | 'nfts' | 'topics' | 'schedules' | 'records' | 'recordsByNs' | 'nextEntity' | 'lastConsensusNs'
>;

export interface Snapshot {
  version: number;
  /** Journal length the state covers; entries after it are replayed. */
  journalBytes: number;
  /** Number of journal entries the state covers. */
  entries: number;
  /** sha256 of the journal's last TAIL_BYTES bytes before journalBytes. */
  tailSha: string;
  state: StateData;
  /** Transaction keys that reached consensus (duplicate detection). */
  seen: string[];
}

export function tailHash(tail: Buffer): string {
  return createHash('sha256').update(tail).digest('hex');
}

export class SnapshotStore {
  readonly path: string;
  constructor(dataDir: string) {
    this.path = join(dataDir, 'snapshot.v8');
  }

  static readonly tailBytes = TAIL_BYTES;

  /** The stored snapshot, or null when there is none or it cannot be read. */
  read(): Snapshot | null {
    if (!existsSync(this.path)) return null;
    try {
      const s = deserialize(readFileSync(this.path)) as Snapshot;
      return s && s.version === SNAPSHOT_VERSION ? s : null;
    } catch {
      return null;
    }
  }

  write(s: Snapshot): void {
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, serialize(s), { mode: 0o600 });
    renameSync(tmp, this.path);
  }

  remove(): void {
    rmSync(this.path, { force: true });
  }
}
