/**
 * The x402 Bazaar discovery extension of a 402 answer (issue 29 item 7; x402 v2 `extensions.bazaar`),
 * so discovery clients and facilitators can catalogue the paid route: how to call it (method, JSON
 * body and its schema, path parameters) and what it answers (an example and the schema of its 200).
 *
 * Built from the route's own zod schemas (the ones /openapi.json is made of) with @x402/extensions'
 * helpers: declareDiscoveryExtension declares it, bazaarResourceServerExtension.enrichDeclaration adds
 * the method, the route template and the path parameters as the library's own resource server does,
 * and validateDiscoveryExtension checks it once per route; a declaration that does not validate is
 * logged and left out rather than sent broken. The body example is the request's own body (it passed
 * the route's validation, so it fits the schema; a paid route's body holds no secret); the output
 * example is the first `examples` entry of the 200 schema's metadata, without which the output part is
 * left out (the library requires an example for it).
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { bazaarResourceServerExtension, declareDiscoveryExtension, validateDiscoveryExtension, type DiscoveryExtension } from '@x402/extensions/bazaar';

type JsonObject = Record<string, unknown>;

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** JSON Schema of a zod schema with every local $ref inlined (the extension must carry no $ref). */
function jsonSchemaOf(schema: unknown, io: 'input' | 'output'): JsonObject | undefined {
  if (!(schema instanceof z.ZodType)) return undefined;
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', reused: 'inline' }) as JsonObject;
  const defs = (json.$defs ?? {}) as Record<string, JsonObject>;
  // `format` goes too: the validators of the extension (Ajv without formats) only warn about it
  const dropped = new Set(['$defs', '$schema', 'id', 'format']);
  const inline = (node: unknown, depth: number, inProperties = false): unknown => {
    if (Array.isArray(node)) return node.map((n) => inline(n, depth));
    if (!node || typeof node !== 'object') return node;
    const obj = node as JsonObject;
    if (!inProperties && typeof obj.$ref === 'string' && obj.$ref.startsWith('#/$defs/') && depth < 16) {
      const { $ref, ...rest } = obj;
      return inline({ ...defs[$ref.slice('#/$defs/'.length)], ...rest }, depth + 1);
    }
    // under `properties` the keys are field names, never keywords
    const entries = Object.entries(obj).filter(([k]) => inProperties || !dropped.has(k));
    return Object.fromEntries(entries.map(([k, v]) => [k, inline(v, depth, !inProperties && k === 'properties')]));
  };
  return inline(json, 0) as JsonObject;
}

interface RouteShape {
  inputSchema?: JsonObject;
  outputSchema?: JsonObject;
  outputExample?: unknown;
}

const shapes = new WeakMap<object, RouteShape>();
/** route templates whose declaration was checked: true when valid */
const checked = new Map<string, boolean>();

function routeShape(request: FastifyRequest): RouteShape {
  const schema = (request.routeOptions.schema ?? {}) as { body?: unknown; querystring?: unknown; response?: Record<string, unknown> };
  let shape = shapes.get(schema);
  if (!shape) {
    const outputSchema = jsonSchemaOf(schema.response?.[200] ?? schema.response?.['200'], 'output');
    const examples = outputSchema?.examples;
    shape = {
      inputSchema: jsonSchemaOf(BODY_METHODS.has(request.method) ? schema.body : schema.querystring, 'input'),
      ...(outputSchema ? { outputSchema } : {}),
      ...(Array.isArray(examples) && examples.length ? { outputExample: examples[0] } : {}),
    };
    if (outputSchema) delete outputSchema.examples;
    shapes.set(schema, shape);
  }
  return shape;
}

/** `{ bazaar: ... }` for this paid request's 402, or undefined when it cannot be declared validly. */
export function bazaarExtensionOf(request: FastifyRequest): Record<string, unknown> | undefined {
  const shape = routeShape(request);
  const output = shape.outputExample !== undefined ? { output: { example: shape.outputExample, ...(shape.outputSchema ? { schema: shape.outputSchema } : {}) } } : {};
  const body = request.body && typeof request.body === 'object' ? (request.body as JsonObject) : {};
  const declared = BODY_METHODS.has(request.method)
    ? declareDiscoveryExtension({ bodyType: 'json', input: body, inputSchema: shape.inputSchema ?? { properties: {} }, ...output })
    : declareDiscoveryExtension({ input: (request.query ?? {}) as JsonObject, inputSchema: shape.inputSchema ?? { properties: {} }, ...output });
  const path = request.url.split('?')[0]!;
  const routeTemplate = request.routeOptions.url ?? path;
  const enriched = bazaarResourceServerExtension.enrichDeclaration!(declared.bazaar, {
    method: request.method,
    adapter: { getPath: () => path },
    routePattern: routeTemplate,
  }) as DiscoveryExtension;
  const key = `${request.method} ${routeTemplate}`;
  let valid = checked.get(key);
  if (valid === undefined) {
    const result = validateDiscoveryExtension(enriched);
    valid = result.valid;
    checked.set(key, valid);
    if (!valid) request.log.error({ route: key, errors: result.errors }, 'x402 Bazaar declaration does not validate: left out of the 402');
  }
  return valid ? { bazaar: enriched } : undefined;
}
