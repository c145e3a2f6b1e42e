// The substring index of GET /api/search (domain/search.ts) against the obvious filter: for any items
// and any query, find() returns the first `limit` items (in order) having a field that contains the
// query, case-insensitively; never a match across two fields or two items.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SubstringIndex } from '../../domain/search.js';

type Item = { id: number; fields: string[] };

const naive = (items: Item[], q: string, limit: number) =>
  q.length === 0 || q.includes('\0')
    ? []
    : items.filter((it) => it.fields.some((f) => f.replaceAll('\0', '').toLowerCase().includes(q.toLowerCase()))).slice(0, limit).map((it) => it.id);

describe('SubstringIndex', () => {
  it('finds what a linear filter finds (property)', () => {
    const field = fc.string({ unit: fc.constantFrom('a', 'b', 'A', 'B', 'c', '-', ' ', 'é', 'É', '\0'), maxLength: 12 });
    fc.assert(
      fc.property(
        fc.array(fc.array(field, { maxLength: 4 }), { maxLength: 200 }),
        fc.string({ unit: fc.constantFrom('a', 'b', 'B', 'c', '-', 'é', 'É'), minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 10 }),
        (fieldLists, q, limit) => {
          const items = fieldLists.map((fields, id) => ({ id, fields }));
          const index = new SubstringIndex<Item>((it) => it.fields);
          index.rebuild(items);
          expect(index.find(q, limit).map((it) => it.id)).toEqual(naive(items, q, limit));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('agrees with the linear filter over many blocks of items', () => {
    const words = ['alpha', 'Beta', 'gamma-7', 'delta', 'ÉPÉE', 'zeta zeta'];
    const items: Item[] = Array.from({ length: 1000 }, (_, id) => ({ id, fields: [`${words[id % 6]}-${id}`, id % 97 === 0 ? 'rare needle' : 'hay'] }));
    const index = new SubstringIndex<Item>((it) => it.fields);
    index.rebuild(items);
    for (const q of ['needle', 'NEEDLE', 'a-9', '-99', 'épée-6', 'zeta-', 'hay', 'y', 'e', 'zz', '999', 'ta zeta-5', 'alpha-1000']) {
      for (const limit of [1, 7, 100]) expect(index.find(q, limit).map((it) => it.id), `${q} ${limit}`).toEqual(naive(items, q, limit));
    }
  });

  it('does not match across fields or items, nor with NUL in the query', () => {
    const index = new SubstringIndex<Item>((it) => it.fields);
    index.rebuild([
      { id: 1, fields: ['alpha', 'beta'] },
      { id: 2, fields: ['gamma'] },
    ]);
    expect(index.find('alphabeta', 5)).toEqual([]);
    expect(index.find('betagamma', 5)).toEqual([]);
    expect(index.find('a\0b', 5)).toEqual([]);
    expect(index.find('AMM', 5).map((i) => i.id)).toEqual([2]);
    expect(index.find('a', 5).map((i) => i.id)).toEqual([1, 2]);
    expect(index.find('a', 1).map((i) => i.id)).toEqual([1]);
    expect(index.find('zeta', 5)).toEqual([]);
  });
});
