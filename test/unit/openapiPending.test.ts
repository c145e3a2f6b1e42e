// Every route that can answer 202 request_pending (the catalog's affected_routes of that code, which
// test/api/hardeningLedger.test.ts keeps true to the route files) documents it in /openapi.json: the
// PendingBody schema (workflowId, _links.poll) and the Location header to poll (issue 19 item 11).
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../scripts/client-generate.js';
import { errorEntry } from '../../domain/errors.js';

type Json = Record<string, any>;

describe('202 request_pending in /openapi.json', () => {
  it('is documented with its body and Location header on every route that can answer it', async () => {
    const doc = (await buildOpenApiDocument()) as Json;
    const routes = errorEntry('request_pending').affected_routes;
    expect(routes.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const route of routes) {
      const path = route.replace(/:([A-Za-z]+)/g, '{$1}');
      const op = doc.paths[path]?.post;
      expect(op, `POST ${path} in /openapi.json`).toBeDefined();
      const pending = op.responses?.['202'];
      const ok =
        pending?.headers?.location?.schema?.type === 'string' &&
        pending?.content?.['application/json']?.schema?.$ref === '#/components/schemas/PendingBody';
      if (!ok) missing.push(`POST ${path}`);
    }
    expect(missing).toEqual([]);
    const body = doc.components.schemas.PendingBody;
    expect(body.required).toEqual(expect.arrayContaining(['error', 'code', 'workflowId', '_links']));
    expect(body.properties.code.const).toBe('request_pending');
    expect(body.properties._links.properties.poll.required).toEqual(['href']);
  }, 60_000);
});
