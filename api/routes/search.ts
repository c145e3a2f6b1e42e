/**
 * GET /api/search?q= (SPEC 2 "Search result", 4.7): case-insensitive substring match over agent
 * names, DIDs, skills and capabilities (the directory this process holds in memory,
 * api/routes/agents/directory.ts) and task titles, descriptions and capabilities (the marketplace's
 * task book, api/routes/market/taskBook.ts). Memory only: no PostgreSQL per request.
 *
 * Both sources are NOTIFY-fed caches; the search index of each (domain/search.ts) is rebuilt on the
 * first query after the source changed (the directory's version, the task book's array identity).
 * Results: agents newest registration first, then tasks newest first; `limit` (default 20, max 100)
 * is shared half and half when both kinds have more matches than that, else the other kind fills up.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { agentSearchResultSchema, searchQuerySchema, searchResultSchema, taskSearchResultSchema } from '../schemas/search.js';
import { sendJson, serializerFor } from '../serializer.js';
import { agentDirectoryOf, type AgentDirectory } from './agents/directory.js';
import { marketState } from './market/shared.js';
import type { TaskBook } from './market/taskBook.js';
import { SubstringIndex } from '../../domain/search.js';
import type { AgentEntry } from '../../domain/directory.js';
import type { TaskRecord } from '../../domain/market.js';

/** The directory and the task book of an app, waited for; 503 while either is still loading. */
export interface MemorySources {
  directory: AgentDirectory;
  book: TaskBook;
}

export function memorySources(ctx: AppContext): MemorySources {
  const directory = agentDirectoryOf(ctx);
  if (!directory) throw new Error('the agents route group must be registered before search and the feed');
  return { directory, book: marketState(ctx).book };
}

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

/** fn memoised per (immutable) object. */
function onceEach<K extends object>(fn: (k: K) => string): (k: K) => string {
  const done = new WeakMap<K, string>();
  return (k) => {
    let v = done.get(k);
    if (v === undefined) done.set(k, (v = fn(k)));
    return v;
  };
}

const searchRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sources = memorySources(ctx);
  const agentIndex = new SubstringIndex<AgentEntry>((a) => [a.name, a.did, ...(a.skills ?? []), ...a.capabilities]);
  const taskIndex = new SubstringIndex<TaskRecord>((t) => [t.title, t.description, ...t.capabilities]);
  const agents = new FollowingIndex(agentIndex);
  const tasks = new FollowingIndex(taskIndex);
  const current = () => {
    agents.follow(sources.directory.version, () => agentsNewestFirst(sources.directory));
    const all = sources.book.all();
    tasks.follow(all, () => all);
  };

  // Entries and task records are immutable values of their caches (a change replaces the object),
  // so each result is serialised once, the first time it is found.
  const serializeAgent = serializerFor(agentSearchResultSchema);
  const serializeTask = serializerFor(taskSearchResultSchema);
  const agentResult = onceEach((a: AgentEntry) =>
    serializeAgent({
      type: 'agent',
      did: a.did,
      name: a.name,
      tier: a.tier,
      capabilities: a.capabilities,
      active: a.active,
      ...(a.skills ? { skills: a.skills } : {}),
      _links: { self: { href: `/agents/${encodeURIComponent(a.did)}` } },
    }),
  );
  const taskResult = onceEach((t: TaskRecord) =>
    serializeTask({
      type: 'task',
      taskId: t.taskId,
      title: t.title,
      priceHbar: t.priceHbar,
      capabilities: t.capabilities,
      status: t.status,
      _links: { self: { href: `/market/tasks/${t.taskId}` } },
    }),
  );

  app.get(
    '/api/search',
    {
      schema: {
        tags: ['meta'],
        summary: 'Search agents and tasks (case-insensitive substring, from memory)',
        description:
          'Matches agent names, DIDs, skills and capabilities, and task titles, descriptions and capabilities. ' +
          'Agents come first (newest registration first), then tasks (newest first). count is the number of results in the answer.',
        querystring: searchQuerySchema,
        response: { 200: searchResultSchema, ...errorResponses(400, 503) },
      },
    },
    async (request, reply) => {
      await sourcesReady(sources);
      current();
      const { q, type, limit } = request.query;
      // up to `limit` of each kind, then shared
      const foundAgents = type === 'task' ? [] : agentIndex.find(q, limit);
      const foundTasks = type === 'agent' ? [] : taskIndex.find(q, limit);
      const [na, nt] = shareLimit(limit, foundAgents.length, foundTasks.length);
      const parts: string[] = [];
      for (let i = 0; i < na; i++) parts.push(agentResult(foundAgents[i]!));
      for (let i = 0; i < nt; i++) parts.push(taskResult(foundTasks[i]!));
      return sendJson(reply, `{"query":${JSON.stringify(q)},"results":[${parts.join(',')}],"count":${parts.length}}`);
    },
  );
};

export default searchRoutes;
