/**
 * The search indexes of GET /api/search (domain/search.ts) kept in step with their NOTIFY-fed
 * sources, and how a query's `limit` is shared between agents and tasks.
 */
import { performance } from 'node:perf_hooks';
import type { SubstringIndex } from '../../domain/search.js';

/**
 * Splits `limit` between two kinds: each gets half (the first the odd one), and a kind with fewer
 * matches than its half leaves the rest to the other.
 */
export function shareLimit(limit: number, agents: number, tasks: number): [number, number] {
  const half = Math.ceil(limit / 2);
  const a = Math.min(agents, Math.max(half, limit - tasks));
  return [a, Math.min(tasks, limit - a)];
}

/**
 * A search index that follows its source: rebuilt when the source's change marker moved, but not
 * sooner than REBUILD_SPACING times the last rebuild's duration after it, so a stream of changes
 * cannot keep the event loop rebuilding (at 100,000 items a rebuild takes a few hundred ms); in
 * between, queries are answered from the previous index (changes show up after that delay).
 */
const REBUILD_SPACING = 5;

export class FollowingIndex<T> {
  private marker: unknown = {};
  private builtAt = -Infinity;
  private buildMs = 0;

  constructor(readonly index: SubstringIndex<T>) {}

  follow(marker: unknown, items: () => readonly T[]): void {
    if (marker === this.marker) return;
    const now = performance.now();
    if (now - this.builtAt < REBUILD_SPACING * this.buildMs) return;
    this.marker = marker;
    this.index.rebuild(items());
    this.builtAt = performance.now();
    this.buildMs = this.builtAt - now;
  }
}
