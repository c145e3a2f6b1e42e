/**
 * GET /api/search?q= (SPEC 2 "Search result", 4.7): case-insensitive substring match over agent
 * names, DIDs, skills and capabilities (the directory this process holds in memory) and task titles,
 * descriptions and capabilities (the marketplace's task book): api/search/sources.ts. Memory only:
 * no PostgreSQL per request.
 *
 * Both sources are NOTIFY-fed caches; the search index of each (domain/search.ts) is rebuilt on the
 * first query after the source changed (the directory's version, the task book's array identity).
 * Results: agents newest registration first, then tasks newest first; `limit` (default 20, max 100)
 * is shared half and half when both kinds have more matches than that, else the other kind fills up.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { errorResponses } from '../schemas/common.js';
import { agentSearchResultSchema, searchQuerySchema, searchResultSchema, taskSearchResultSchema } from '../schemas/search.js';
import { sendJson, serializerFor } from '../serializer.js';
import { agentsNewestFirst, memorySources, sourcesReady } from '../search/sources.js';
import { FollowingIndex, shareLimit } from '../search/followingIndex.js';
import { SubstringIndex } from '../../domain/search.js';
import type { AgentEntry } from '../../domain/directory.js';
import type { TaskRecord } from '../../domain/market.js';

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
  const sources = memorySources(app, ctx);
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
