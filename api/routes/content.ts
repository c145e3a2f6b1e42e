/**
 * Content (SPEC 4.7; DESIGN.md section 10 "Content"): the markdown guides (/marketplace-guide,
 * /market-guide, /medical-guide) as text/markdown, the HTML pages of content/pages.ts through the one
 * layout, and /contact (api/routes/contact.ts, with PostgreSQL). Static content: bodies are rendered
 * at start, whole pages cached in memory after their first render (per base URL). /rules is rendered
 * by the trust rule routes (api/routes/rules.ts) and linked from the navigation.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBase, type AppContext } from '../context.js';
import { ContentRenderer, PAGES } from '../../content/pages.js';
import contactRoutes, { CONTACT_LIMITS } from './contact.js';

const HTML = 'text/html; charset=utf-8';
const MARKDOWN = 'text/markdown; charset=utf-8';

const contentRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const renderer = new ContentRenderer({
    marketFeeBps: ctx.config.MARKET_FEE_BPS,
    network: ctx.ledger?.deployment.network ?? ctx.config.HEDERA_NETWORK,
    contactLimits: CONTACT_LIMITS,
  });

  for (const [path, text] of ContentRenderer.guides()) {
    app.get(path, { schema: { tags: ['content'], summary: 'Guide (markdown)', produces: ['text/markdown'] } }, async (_request, reply) => reply.type(MARKDOWN).send(text as never));
  }
  for (const page of PAGES) {
    app.get(page.path, { schema: { tags: ['content'], summary: `${page.title} (HTML)`, produces: ['text/html'] } }, async (request, reply) =>
      reply.type(HTML).send(renderer.page(page.path, publicBase(ctx, request)) as never),
    );
  }
  // Browsers ask for /favicon.ico on pages without an icon link (e.g. /rules): an empty answer, not a 404 in their console.
  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) => reply.code(204).header('cache-control', 'public, max-age=86400').send());
  if (ctx.sql) await app.register(contactRoutes, { ctx, renderer });
};

export default contentRoutes;
