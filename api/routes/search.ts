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

/** Registered agents, newest registration first (directory sequence, then time). */
export function agentsNewestFirst(directory: AgentDirectory): AgentEntry[] {
  return [...directory.values()].sort((a, b) => b.sequence - a.sequence || b.entry.timestamp - a.entry.timestamp).map((v) => v.entry);
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
  let agentVersion = -1;
  let taskSource: readonly TaskRecord[] | null = null;

  const current = () => {
    if (agentVersion !== sources.directory.version) {
      agentVersion = sources.directory.version;
      agentIndex.rebuild(agentsNewestFirst(sources.directory));
    }
    const tasks = sources.book.all();
    if (tasks !== taskSource) {
      taskSource = tasks;
      taskIndex.rebuild(tasks);
    }
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
      const agents = type === 'task' ? [] : agentIndex.find(q, limit);
      const tasks = type === 'agent' ? [] : taskIndex.find(q, limit);
      const [na, nt] = shareLimit(limit, agents.length, tasks.length);
      const parts: string[] = [];
      for (let i = 0; i < na; i++) parts.push(agentResult(agents[i]!));
      for (let i = 0; i < nt; i++) parts.push(taskResult(tasks[i]!));
      return sendJson(reply, `{"query":${JSON.stringify(q)},"results":[${parts.join(',')}],"count":${parts.length}}`);
    },
  );
};

export default searchRoutes;
