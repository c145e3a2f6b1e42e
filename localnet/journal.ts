// The journal: one JSON line per transaction that reached consensus (its Transaction bytes and
// consensus time). Replaying it from genesis rebuilds the whole ledger state.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface JournalEntry {
  /** consensus time, nanoseconds since the epoch, decimal string */
  t: string;
  /** proto.Transaction bytes, base64 */
  tx: string;
}

export class Journal {
  readonly path: string;
  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, 'journal.jsonl');
  }

  readAll(): JournalEntry[] {
    if (!existsSync(this.path)) return [];
    const out: JournalEntry[] = [];
    for (const line of readFileSync(this.path, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as JournalEntry);
      } catch {
        // A torn last line (crash mid-write) is dropped: that transaction never got a receipt out.
        break;
      }
    }
    return out;
  }

  /** Synchronous append so the entry is on disk before the receipt is served. */
  append(e: JournalEntry): void {
    appendFileSync(this.path, JSON.stringify(e) + '\n');
  }
}
