/**
 * The agent-readiness rule catalog (SPEC 4.7; DESIGN.md section 10 "Content"): GET /rules (HTML,
 * with the verification conventions), /rules.json (the catalog and its profile hash),
 * /rules/{id} (HTML) and /rules/{id}.json (JSON). An unknown id answers 404 trust_rule_not_found
 * in the error body (JSON) for both forms, like every other error of the service.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PROFILE_VERSION } from '../../domain/trust/rules.js';
import { PROFILE_DOCUMENT, PROFILE_HASH } from '../../domain/trust/snapshot.js';
import { ApiError, echo } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { publicRuleSchema, ruleCatalogSchema, ruleParams } from '../schemas/trust.js';
import { sendJson, serializerFor } from '../serializer.js';
import { renderRulePage, renderRulesPage, type RenderedPage } from '../trust/rulesHtml.js';
import { renderLayout } from '../../content/layout.js';
import { publicBase, type AppContext } from '../context.js';

const HTML = 'text/html; charset=utf-8';

const rulesRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  // The catalog is static for the life of the process: everything is rendered once.
  const rules = PROFILE_DOCUMENT.rules;
  const index = renderRulesPage(rules, { version: PROFILE_VERSION, hash: PROFILE_HASH });
  // Whole pages in the content layout, cached per public base URL (the canonical link names it).
  const htmlCache = new Map<string, string>();
  const html = (page: RenderedPage, base: string): string => {
    const key = `${base}${page.meta.path}`;
    let out = htmlCache.get(key);
    if (out === undefined) {
      out = renderLayout(page.meta, page.body, base);
      if (htmlCache.size < 1_000) htmlCache.set(key, out);
    }
    return out;
  };
  const catalogJson = serializerFor(ruleCatalogSchema)({ ...PROFILE_DOCUMENT, profile_hash: PROFILE_HASH });
  const serializeRule = serializerFor(publicRuleSchema);
  const pages = new Map(rules.map((r) => [r.id, { page: renderRulePage(r), json: serializeRule(r) }]));

  app.get('/rules', { schema: { tags: ['trust'], summary: 'Agent-readiness rules and how to verify a snapshot (HTML)', produces: ['text/html'] } }, async (req, reply) => reply.type(HTML).send(html(index, publicBase(ctx, req))));
  app.get('/rules.json', { schema: { tags: ['trust'], summary: 'Agent-readiness rule catalog with its profile hash', response: { 200: ruleCatalogSchema } } }, async (_req, reply) => sendJson(reply, catalogJson));
  app.get(
    '/rules/:id',
    {
      config: { document: true },
      schema: {
        tags: ['trust'],
        summary: 'One rule: HTML, or JSON when the id ends in .json',
        params: ruleParams,
        response: { 200: { description: 'The rule: an HTML page, or its JSON when the id ends in .json', content: { 'text/html': { schema: z.string() }, 'application/json': { schema: publicRuleSchema } } }, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const asJson = req.params.id.endsWith('.json');
      const id = asJson ? req.params.id.slice(0, -'.json'.length) : req.params.id;
      const rendered = pages.get(id);
      if (!rendered) throw new ApiError('trust_rule_not_found', `No rule has id ${echo(id)}`, { hint: 'See the rule ids at /rules (AR-001 ...)' });
      return asJson ? sendJson(reply, rendered.json) : reply.type(HTML).send(html(rendered.page, publicBase(ctx, req)) as never);
    },
  );
};

export default rulesRoutes;
