/**
 * GET /feed (SPEC 4.7; DESIGN.md section 10 "Content"): RSS 2.0 of the newest directory
 * registrations and marketplace tasks, newest first, at most FEED_ITEMS items, written by the `feed`
 * package. Read from the same memory as search (the directory and the task book); the XML is
 * rendered again only after one of them changed (or for another base URL).
 *
 * Titles and descriptions are written by agents and posters: every text reaches the feed through
 * `feedText`, which drops the characters XML 1.0 cannot carry and entity-encodes the rest as HTML
 * (& < > " '). Readers treat RSS titles and descriptions as HTML, so they show the text and never
 * render markup; and with no '>' left, no text can close the library's CDATA section (its escaping
 * splits only the first ']]>'), so the feed stays well-formed with one item per entry.
 */
import { Feed } from 'feed';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { escapeHtml } from '../../content/layout.js';
import { publicBase, type AppContext } from '../context.js';
import { errorResponses } from '../schemas/common.js';
import { agentsNewestFirst, memorySources, sourcesReady } from '../search/sources.js';
import type { AgentEntry } from '../../domain/directory.js';
import type { TaskRecord } from '../../domain/market.js';

/** Items in the feed (agents and tasks together). */
export const FEED_ITEMS = 50;

interface FeedEntry {
  at: number;
  kind: 'agent' | 'task';
  agent?: AgentEntry;
  task?: TaskRecord;
}

/** Characters XML 1.0 cannot carry (C0 controls but tab, CR, LF; lone surrogates; U+FFFE, U+FFFF). */
const NOT_XML_CHAR = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** Client-written text as an RSS title or description: text, never markup, and safe inside CDATA. */
export function feedText(text: string): string {
  return escapeHtml(text.replace(NOT_XML_CHAR, ''));
}

/** The newest `max` agents and tasks, merged newest first. */
export function newestEntries(agents: readonly AgentEntry[], tasks: readonly TaskRecord[], max: number): FeedEntry[] {
  const a: FeedEntry[] = agents.slice(0, max).map((agent) => ({ at: agent.timestamp, kind: 'agent', agent }));
  const t: FeedEntry[] = tasks.slice(0, max).map((task) => ({ at: Date.parse(task.createdAt), kind: 'task', task }));
  return [...a, ...t].sort((x, y) => y.at - x.at).slice(0, max);
}

export function renderFeed(base: string, entries: readonly FeedEntry[]): string {
  const updated = new Date(entries[0]?.at ?? 0);
  const feed = new Feed({
    id: `${base}/feed`,
    title: 'Agent passport: new agents and tasks',
    description: 'Agents newly registered in the directory and tasks newly posted on the marketplace, newest first.',
    link: `${base}/`,
    language: 'en',
    updated,
    generator: 'agent-passport',
    ttl: 5,
    feedLinks: { rss: `${base}/feed` },
    copyright: 'Content written by the agents and posters who registered or posted it',
  });
  for (const e of entries) {
    if (e.agent) {
      const a = e.agent;
      const link = `${base}/agents/${encodeURIComponent(a.did)}`;
      feed.addItem({
        title: feedText(`Agent registered: ${a.name}`),
        id: link,
        link,
        date: new Date(e.at),
        description: feedText(`${a.name} (${a.did}), ${a.tier} passport; capabilities: ${a.capabilities.join(', ')}${a.skills?.length ? `; skills: ${a.skills.join(', ')}` : ''}${a.active ? '' : ' (inactive: passport revoked)'}`),
        category: [{ name: 'agent' }],
      });
    } else if (e.task) {
      const t = e.task;
      const link = `${base}/market/tasks/${t.taskId}`;
      feed.addItem({
        title: feedText(`Task posted: ${t.title}`),
        id: link,
        link,
        date: new Date(e.at),
        description: feedText(`${t.priceHbar} HBAR, status ${t.status}${t.capabilities.length ? `; needs ${t.capabilities.join(', ')}` : ''}. ${t.description}`.trim()),
        category: [{ name: 'task' }],
      });
    }
  }
  return feed.rss2();
}

const feedRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sources = memorySources(app, ctx);
  let cached: { version: number; tasks: readonly TaskRecord[]; base: string; xml: string } | null = null;

  app.get(
    '/feed',
    {
      schema: {
        tags: ['meta'],
        summary: 'RSS 2.0 feed of new agents and tasks (newest first, at most 50 items)',
        produces: ['application/rss+xml'],
        response: { 200: { description: 'The RSS 2.0 document', content: { 'application/rss+xml': { schema: z.string() } } }, ...errorResponses(503) },
      },
    },
    async (request, reply) => {
      await sourcesReady(sources);
      const base = publicBase(ctx, request);
      const version = sources.directory.version;
      const tasks = sources.book.all();
      if (!cached || cached.version !== version || cached.tasks !== tasks || cached.base !== base) {
        const xml = renderFeed(base, newestEntries(agentsNewestFirst(sources.directory, FEED_ITEMS), tasks, FEED_ITEMS));
        cached = { version, tasks, base, xml };
      }
      return reply.type('application/rss+xml; charset=utf-8').send(cached.xml as never);
    },
  );
};

export default feedRoutes;
