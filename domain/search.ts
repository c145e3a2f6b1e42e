/**
 * Case-insensitive substring search over items held in memory (GET /api/search, SPEC 4.7). Pure: no
 * I/O.
 *
 * The searchable fields of every item are lower-cased once and laid end to end in one string, each
 * field followed by a NUL, with the offset where each item starts. A query is then a run of
 * String#indexOf over that one string (V8 searches a flat one-byte string much faster than a loop
 * over 100,000 small ones); a hit is mapped back to its item by a binary search of the offsets, and
 * the scan resumes at the next item, so an item counts once and the scan stops after `limit` items.
 * NUL never occurs in a field (it is dropped) nor in a query (such a query matches nothing), so a
 * match never spans two fields or two items.
 *
 * The scan is anchored on the query's rarest character (by its count in the text, taken at
 * rebuild): the search looks for the query's tail from that character, whose first character is
 * then rare, and checks the head in place. A query with a character the text does not hold at all
 * is answered without a scan. (String#indexOf stops at every occurrence of the pattern's first
 * character; anchoring on "v" instead of "a" in "archive" is the difference between visiting most
 * of the text and almost none of it.)
 */

/** Lower-case form used for fields and queries alike. */
export function searchFold(text: string): string {
  return text.toLowerCase();
}

export class SubstringIndex<T> {
  private hay = '';
  private starts = new Int32Array(0);
  private items: readonly T[] = [];
  /** occurrences of each UTF-16 code unit in `hay` */
  private counts = new Uint32Array(65536);

  /** `fieldsOf` names the strings of an item that a query may match. */
  constructor(private readonly fieldsOf: (item: T) => readonly string[]) {}

  /** Replaces the indexed items; their order is the order of results. */
  rebuild(items: readonly T[]): void {
    const parts: string[] = [];
    const starts = new Int32Array(items.length);
    let at = 0;
    for (let i = 0; i < items.length; i++) {
      starts[i] = at;
      for (const field of this.fieldsOf(items[i]!)) {
        const f = searchFold(field.includes('\0') ? field.replaceAll('\0', '') : field) + '\0';
        parts.push(f);
        at += f.length;
      }
    }
    const hay = parts.join('');
    const counts = new Uint32Array(65536);
    for (let i = 0; i < hay.length; i++) counts[hay.charCodeAt(i)]!++;
    this.hay = hay;
    this.starts = starts;
    this.items = items;
    this.counts = counts;
  }

  get size(): number {
    return this.items.length;
  }

  /** Index of the item whose text holds position `pos`. */
  private itemAt(pos: number): number {
    const s = this.starts;
    let lo = 0;
    let hi = s.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (s[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The first `limit` items (in index order) with a field containing `query` (any case). */
  find(query: string, limit: number): T[] {
    const out: T[] = [];
    const q = searchFold(query);
    if (q.length === 0 || q.includes('\0') || limit <= 0) return out;
    // the anchor: the query's rarest character; none in the text means no match
    let k = 0;
    for (let j = 1; j < q.length; j++) if (this.counts[q.charCodeAt(j)]! < this.counts[q.charCodeAt(k)]!) k = j;
    if (this.counts[q.charCodeAt(k)] === 0) return out;
    const tail = k === 0 ? q : q.slice(k);
    const head = q.slice(0, k);
    const hay = this.hay;
    let from = 0; // where the next match may start (the start of the next unreported item)
    let at = k; // where the tail is searched from
    while (out.length < limit) {
      const pos = hay.indexOf(tail, at);
      if (pos < 0) break;
      const start = pos - k;
      if (k > 0 && !hay.startsWith(head, start)) {
        at = pos + 1;
        continue;
      }
      const i = this.itemAt(start);
      out.push(this.items[i]!);
      from = i + 1 < this.starts.length ? this.starts[i + 1]! : hay.length;
      at = from + k;
    }
    return out;
  }
}
