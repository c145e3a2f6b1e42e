// The journal: one JSON line per transaction that reached consensus (its Transaction bytes and
// consensus time). Replaying it from genesis rebuilds the whole ledger state; a snapshot
// (snapshot.ts) remembers how many bytes of it are already applied, so a restart reads only the rest.
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';

export interface JournalEntry {
  /** consensus time, nanoseconds since the epoch, decimal string */
  t: string;
  /** proto.Transaction bytes, base64 */
  tx: string;
}

export class Journal {
  readonly path: string;
  /** Length in bytes of the journal's complete lines (where the next entry is appended). */
  private size = 0;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.path = join(dataDir, 'journal.jsonl');
  }

  get bytes(): number {
    return this.size;
  }

  /** Every entry from genesis. */
  readAll(): JournalEntry[] {
    return this.readFrom(0);
  }

  /**
   * The entries that start at byte `offset` (the end of a complete line). A torn last line (a crash
   * mid-write: that transaction never got a receipt out) is cut off the file, so the next append
   * starts on a line of its own instead of gluing itself to the fragment.
   */
  readFrom(offset: number): JournalEntry[] {
    if (!existsSync(this.path)) {
      this.size = 0;
      return [];
    }
    // Only the bytes after the offset: after a snapshot the journal before it is not needed.
    const buf = this.read(offset, statSync(this.path).size - offset);
    const out: JournalEntry[] = [];
    let pos = 0;
    while (pos < buf.length) {
      const nl = buf.indexOf(0x0a, pos);
      if (nl < 0) break; // no newline: torn
      const line = buf.subarray(pos, nl).toString('utf8');
      if (line.trim()) {
        try {
          out.push(JSON.parse(line) as JournalEntry);
        } catch {
          break;
        }
      }
      pos = nl + 1;
    }
    if (pos < buf.length) truncateSync(this.path, offset + pos);
    this.size = offset + pos;
    return out;
  }

  /** The `n` bytes that end at byte `end` (used to recognise the journal a snapshot was taken of). */
  tail(end: number, n: number): Buffer {
    if (!existsSync(this.path)) return Buffer.alloc(0);
    const start = Math.max(0, end - n);
    const out = this.read(start, end - start);
    return out.length === end - start ? out : Buffer.alloc(0);
  }

  /** Up to `length` bytes from byte `start` (fewer when the file is shorter). */
  private read(start: number, length: number): Buffer {
    const out = Buffer.alloc(Math.max(0, length));
    const fd = openSync(this.path, 'r');
    try {
      return out.subarray(0, readSync(fd, out, 0, out.length, start));
    } finally {
      closeSync(fd);
    }
  }

  /** Synchronous append so the entry is on disk before the receipt is served. */
  append(e: JournalEntry): void {
    const line = JSON.stringify(e) + '\n';
    appendFileSync(this.path, line);
    this.size += Buffer.byteLength(line);
  }
}
