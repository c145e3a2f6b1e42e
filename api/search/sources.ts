/**
 * What GET /api/search and GET /feed read (SPEC 4.7): the directory this process holds in memory
 * (api/agents/directory.ts, the app's `agentDirectory`) and the marketplace's task book (memory,
 * NOTIFY-fed). Memory only: no PostgreSQL per request.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import type { AgentDirectory } from '../agents/directory.js';
import type { AgentEntry } from '../../domain/directory.js';
import type { TaskRecord } from '../../domain/market.js';

/** The directory and the open tasks of an app. */
export interface MemorySources {
  directory: AgentDirectory;
  book: { ready(): Promise<void>; all(): readonly TaskRecord[] };
}

export function memorySources(app: FastifyInstance, ctx: AppContext): MemorySources {
  if (!app.hasDecorator('agentDirectory')) throw new Error('the agent directory must be installed before search and the feed');
  return { directory: app.agentDirectory, book: app.market.book };
}

/** Waits for both sources (only right after start); 503 while either is still loading. */
export async function sourcesReady(s: MemorySources): Promise<void> {
  try {
    await Promise.all([s.directory.ready(), s.book.ready()]);
  } catch {
    throw new ApiError('service_unavailable', 'The directory or the task list is still loading', { hint: 'Retry after 30 seconds' });
  }
}

/** Registered agents, newest registration first (directory sequence, then time); the first `max` when given. */
export function agentsNewestFirst(directory: AgentDirectory, max = Infinity): AgentEntry[] {
  const newer = (a: { entry: AgentEntry; sequence: number }, b: { entry: AgentEntry; sequence: number }) => b.sequence - a.sequence || b.entry.timestamp - a.entry.timestamp;
  if (max === Infinity) return [...directory.values()].sort(newer).map((v) => v.entry);
  // the newest `max` in one pass (the feed wants 50 of possibly 100,000)
  const top: Array<{ entry: AgentEntry; sequence: number }> = [];
  for (const v of directory.values()) {
    if (top.length === max && newer(v, top[top.length - 1]!) >= 0) continue;
    let i = top.length;
    while (i > 0 && newer(v, top[i - 1]!) < 0) i--;
    top.splice(i, 0, v);
    if (top.length > max) top.pop();
  }
  return top.map((v) => v.entry);
}
