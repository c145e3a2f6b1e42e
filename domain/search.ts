/**
 * Case-insensitive substring search over items held in memory (GET /api/search, SPEC 4.7). Pure: no
 * I/O.
 *
 * Items are kept in blocks of BLOCK_ITEMS. The searchable fields of a block's items are lower-cased
 * once and laid end to end in one string per block, each field followed by a NUL, with the offset
 * where each item starts. NUL never occurs in a field (it is dropped) nor in a query (such a query
 * matches nothing), so a match never spans two fields or two items.
 *
 * Each block has a filter: a bit set of the hashes of every 1-, 2- and 3-character sequence of its
 * text. A query visits only the blocks whose filter holds all its trigrams (its bigram or character
 * when shorter): a block without them cannot contain the query, and most text does not contain a
 * given rare sequence, so a query that matches little reads little. Within a visited block the scan
 * is String#indexOf anchored on the query's rarest character (by its count in the whole text): the
 * query's tail from that character is searched and its head checked in place, because indexOf stops
 * at every occurrence of the pattern's first character. Hits map back to items by a binary search of
 * the offsets; the scan resumes at the next item, so an item counts once, and stops after `limit`.
 */

/** Lower-case form used for fields and queries alike. */
export function searchFold(text: string): string {
  return text.toLowerCase();
}

/** Items per block (and per filter). */
export const BLOCK_ITEMS = 64;
/** Filter bits per block (2^14 = 2 KiB). */
const FILTER_BITS_LOG2 = 14;
const FILTER_WORDS = (1 << FILTER_BITS_LOG2) >>> 5;

/** Filter bit of a 1-, 2- or 3-character sequence (a, b, c are UTF-16 code units; -1 = absent). */
function gramBit(a: number, b: number, c: number): number {
  let h = Math.imul(a + 0x9e37, 0x85ebca6b);
  if (b >= 0) h = Math.imul(h ^ (b + 0x7f4a), 0xc2b2ae35);
  if (c >= 0) h = Math.imul(h ^ (c + 0x1b87), 0x27d4eb2f);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return h >>> (32 - FILTER_BITS_LOG2);
}

interface Block<T> {
  hay: string;
  /** offset in `hay` where each item starts */
  starts: Int32Array;
  items: readonly T[];
}

export class SubstringIndex<T> {
  private blocks: Block<T>[] = [];
  /** FILTER_WORDS words per block */
  private filters = new Int32Array(0);
  /** occurrences of each UTF-16 code unit in all the text */
  private counts = new Uint32Array(65536);
  private size_ = 0;

  /** `fieldsOf` names the strings of an item that a query may match. */
  constructor(private readonly fieldsOf: (item: T) => readonly string[]) {}

  /** Replaces the indexed items; their order is the order of results. */
  rebuild(items: readonly T[]): void {
    const nBlocks = Math.ceil(items.length / BLOCK_ITEMS);
    const blocks: Block<T>[] = [];
    const filters = new Int32Array(nBlocks * FILTER_WORDS);
    const counts = new Uint32Array(65536);
    for (let b = 0; b < nBlocks; b++) {
      const blockItems = items.slice(b * BLOCK_ITEMS, (b + 1) * BLOCK_ITEMS);
      const parts: string[] = [];
      const starts = new Int32Array(blockItems.length);
      let at = 0;
      for (let i = 0; i < blockItems.length; i++) {
        starts[i] = at;
        for (const field of this.fieldsOf(blockItems[i]!)) {
          const f = searchFold(field.includes('\0') ? field.replaceAll('\0', '') : field) + '\0';
          parts.push(f);
          at += f.length;
        }
      }
      const hay = parts.join('');
      const base = b * FILTER_WORDS;
      let p1 = -1;
      let p2 = -1;
      for (let i = 0; i < hay.length; i++) {
        const c = hay.charCodeAt(i);
        counts[c]!++;
        let bit = gramBit(c, -1, -1);
        filters[base + (bit >>> 5)]! |= 1 << (bit & 31);
        if (p1 >= 0) {
          bit = gramBit(p1, c, -1);
          filters[base + (bit >>> 5)]! |= 1 << (bit & 31);
          if (p2 >= 0) {
            bit = gramBit(p2, p1, c);
            filters[base + (bit >>> 5)]! |= 1 << (bit & 31);
          }
        }
        p2 = p1;
        p1 = c;
      }
      blocks.push({ hay, starts, items: blockItems });
    }
    this.blocks = blocks;
    this.filters = filters;
    this.counts = counts;
    this.size_ = items.length;
  }

  get size(): number {
    return this.size_;
  }

  /** The filter bits a block must hold to possibly contain `q`. */
  private queryBits(q: string): number[] {
    const bits: number[] = [];
    if (q.length === 1) bits.push(gramBit(q.charCodeAt(0), -1, -1));
    else if (q.length === 2) bits.push(gramBit(q.charCodeAt(0), q.charCodeAt(1), -1));
    else for (let i = 0; i + 2 < q.length; i++) bits.push(gramBit(q.charCodeAt(i), q.charCodeAt(i + 1), q.charCodeAt(i + 2)));
    return [...new Set(bits)];
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
    const head = q.slice(0, k);
    const tail = q.slice(k);
    const bits = this.queryBits(q);
    const filters = this.filters;
    blocks: for (let b = 0; b < this.blocks.length && out.length < limit; b++) {
      const base = b * FILTER_WORDS;
      for (const bit of bits) if ((filters[base + (bit >>> 5)]! & (1 << (bit & 31))) === 0) continue blocks;
      const { hay, starts, items } = this.blocks[b]!;
      let at = k; // where the tail is searched from (a match starts at or after the next unreported item)
      while (out.length < limit) {
        const pos = hay.indexOf(tail, at);
        if (pos < 0) break;
        const start = pos - k;
        if (k > 0 && !hay.startsWith(head, start)) {
          at = pos + 1;
          continue;
        }
        const i = itemAt(starts, start);
        out.push(items[i]!);
        if (i + 1 >= starts.length) break;
        at = starts[i + 1]! + k;
      }
    }
    return out;
  }
}

/** Index of the item whose text holds position `pos` (starts ascending). */
function itemAt(starts: Int32Array, pos: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid]! <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
