/**
 * Contact (SPEC 4.7 "GET and POST /contact"; DESIGN.md section 10 "Content"):
 *   GET  /contact                  the form page (content layout; cached with the content pages)
 *   POST /contact                  JSON or application/x-www-form-urlencoded { name, email, message };
 *                                  validated, body capped at 16 KiB, at most CONTACT_HOURLY_CAP_PER_IP (5) messages per
 *                                  address per rolling hour (429 rate_limit_exceeded, Retry-After) on
 *                                  top of the global rate limit; stored in PostgreSQL.
 *                                  201 { id, received_at } for JSON, an HTML confirmation for the form.
 *   GET  /admin/contact-messages   the messages, newest first (admin token; limit/offset)
 */
import { createHash } from 'node:crypto';
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { v7 as uuidv7 } from 'uuid';
import { publicBase, type AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { requireAdmin } from '../plugins/adminAuth.js';
import { errorResponses, paginationQuery } from '../schemas/common.js';
import { insertContactMessage, listContactMessages } from '../../db/queries/contact.js';
import type { ContentRenderer } from '../../content/pages.js';

export const CONTACT_LIMITS = { name: 100, email: 254, message: 5000 } as const;
/** Messages per address per rolling hour. */
/** Default of CONTACT_HOURLY_CAP_PER_IP. */
export const CONTACT_CAP = 5;
const CONTACT_WINDOW_MS = 60 * 60 * 1000;
const CONTACT_BODY_LIMIT = 16 * 1024;

/** Control characters other than tab and line breaks. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const noControl = (s: string) => !CONTROL.test(s);

export const contactBodySchema = z
  .object({
    name: z.string().trim().min(1).max(CONTACT_LIMITS.name).refine((s) => !/[\r\n\t]/.test(s) && noControl(s), 'must be one line without control characters'),
    email: z.email().max(CONTACT_LIMITS.email),
    message: z.string().trim().min(1).max(CONTACT_LIMITS.message).refine(noControl, 'must not contain control characters'),
  })
  .strict()
  .meta({ id: 'ContactMessage' });

const contactReceivedSchema = z.object({ id: z.string(), received_at: z.string() }).meta({ id: 'ContactReceived' });

const contactListSchema = z
  .object({
    messages: z.array(z.object({ id: z.string(), name: z.string(), email: z.string(), message: z.string(), created_at: z.string() })),
    count: z.number(),
    total: z.number(),
    limit: z.number(),
    offset: z.number(),
  })
  .meta({ id: 'ContactMessageList' });

const HTML = 'text/html; charset=utf-8';

const contactRoutes: FastifyPluginAsyncZod<{ ctx: AppContext; renderer: ContentRenderer }> = async (app, { ctx, renderer }) => {
  const sql = ctx.sql!;
  const now = ctx.now ?? (() => new Date());
  const cap = ctx.config.CONTACT_HOURLY_CAP_PER_IP;

  // HTML forms post application/x-www-form-urlencoded (this plugin's scope only); a repeated field
  // keeps its last value and the schema refuses unknown ones.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: CONTACT_BODY_LIMIT }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.get(
    '/contact',
    { schema: { tags: ['content'], summary: 'Contact form (HTML)', produces: ['text/html'] } },
    async (request, reply) => reply.type(HTML).send(renderer.page('/contact', publicBase(ctx, request)) as never),
  );

  app.post(
    '/contact',
    {
      // a form post is answered with an HTML confirmation page
      config: { document: true },
      bodyLimit: CONTACT_BODY_LIMIT,
      schema: {
        tags: ['content'],
        summary: 'Send a message to the operator (JSON or form; stored for the admin)',
        description: `name (1-${CONTACT_LIMITS.name}), email, message (1-${CONTACT_LIMITS.message}); at most ${cap} messages per address per hour. A form post (application/x-www-form-urlencoded) gets an HTML confirmation.`,
        body: contactBodySchema,
        response: { 201: contactReceivedSchema, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const at = now();
      const id = uuidv7();
      const retryAt = await insertContactMessage(
        sql,
        { id, ...request.body, ipSha256: createHash('sha256').update(normalizeIP(request.ip)).digest(), at },
        cap,
        CONTACT_WINDOW_MS,
      );
      if (retryAt) {
        const seconds = Math.max(1, Math.ceil((retryAt.getTime() - at.getTime()) / 1000));
        throw new ApiError('rate_limit_exceeded', `At most ${cap} contact messages per address per hour`, {
          hint: `Retry after ${retryAt.toISOString()} (Retry-After: ${seconds} s)`,
          headers: { 'retry-after': String(seconds) },
        });
      }
      reply.code(201);
      if (request.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) {
        const page = renderer.adHoc(
          { path: '/contact', title: 'Message received', description: 'Your message was stored for the operator.' },
          `# Message received\n\nThank you. Your message (reference \`${id}\`) is stored for the operator of this instance, who answers by email.\n\n[Back to the site](/what-is-agent-readiness)`,
          publicBase(ctx, request),
        );
        return reply.type(HTML).send(page as never);
      }
      return { id, received_at: at.toISOString() };
    },
  );

  app.get(
    '/admin/contact-messages',
    {
      onRequest: requireAdmin(ctx.config.ADMIN_TOKEN_SHA256),
      schema: {
        tags: ['admin'],
        summary: 'Contact messages, newest first (admin token)',
        querystring: z.object(paginationQuery),
        response: { 200: contactListSchema, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      const { messages, total } = await listContactMessages(sql, limit, offset);
      reply.header('cache-control', 'no-store');
      return {
        messages: messages.map((m) => ({ id: m.id, name: m.name, email: m.email, message: m.message, created_at: m.created_at.toISOString() })),
        count: messages.length,
        total,
        limit,
        offset,
      };
    },
  );
};

export default contactRoutes;
