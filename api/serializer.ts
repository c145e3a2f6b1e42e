/**
 * Response serialisation with compiled JSON-Schema serialisers (issue 8, "The fast path"): each
 * route's zod response schema is turned into JSON Schema once (z.toJSONSchema, io 'output') and
 * compiled with fast-json-stringify, instead of running zod over every response as
 * fastify-type-provider-zod's serializerCompiler does. Output is the same JSON: properties in schema
 * order, unknown properties dropped unless the schema is .loose().
 *
 * Compiled serialisers are memoised per zod schema object, so the error schema shared by every
 * route is compiled once. A schema JSON Schema cannot express (a transform, a custom type) falls
 * back to zod's serialiser for that route only.
 *
 * Routes that answer from memory can serialise once and send the string (`sendJson`): fastify
 * sends a string with a JSON content type as is.
 */
import fastJson from 'fast-json-stringify';
import type { FastifyReply, FastifySerializerCompiler } from 'fastify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { $ZodType } from 'zod/v4/core';

export type Serialize = (data: unknown) => string;

const COMPILED = new WeakMap<object, Serialize | null>();

function zodSchemaOf(maybe: unknown): z.ZodType | null {
  if (maybe instanceof $ZodType) return maybe as z.ZodType;
  const props = (maybe as { properties?: unknown } | null)?.properties;
  if (props instanceof $ZodType) return props as z.ZodType;
  return null;
}

/**
 * The schema without its `required` lists (outside unions, see below). fast-json-stringify writes
 * required properties before optional ones; without the lists it keeps the schema's order, so the
 * bytes are the ones zod + JSON.stringify wrote. (The lists only made it throw on a missing property: handlers' return
 * types are checked against the same zod schemas at compile time, and responses are not validated
 * at run time any more -- the point of compiling.)
 */
function withoutRequired(root: unknown): unknown {
  const defs = ((root as { definitions?: Record<string, unknown> } | null)?.definitions ?? {}) as Record<string, unknown>;
  // definitions reachable from inside an anyOf/oneOf (through $ref, transitively)
  const unionDefs = new Set<string>();
  const collect = (node: unknown, inUnion: boolean): void => {
    if (Array.isArray(node)) return node.forEach((n) => collect(n, inUnion));
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && inUnion && typeof v === 'string') {
        const name = v.replace('#/definitions/', '');
        if (!unionDefs.has(name)) {
          unionDefs.add(name);
          collect(defs[name], true);
        }
      } else if (k !== 'definitions') collect(v, inUnion || k === 'anyOf' || k === 'oneOf');
    }
  };
  collect(root, false);
  for (const [name, def] of Object.entries(defs)) if (!unionDefs.has(name)) collect(def, false);

  const walk = (node: unknown, inUnion: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, inUnion));
    if (!node || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      // Inside anyOf/oneOf fast-json-stringify picks the branch by validating the value: there the
      // required lists stay (they tell branches apart), and additionalProperties: false goes (an
      // extra field would match no branch and throw, where zod just dropped it).
      if (k === 'required' && !inUnion) continue;
      if (k === 'additionalProperties' && v === false && inUnion) continue;
      if (k === 'definitions' && v && typeof v === 'object') {
        out[k] = Object.fromEntries(Object.entries(v).map(([name, d]) => [name, walk(d, unionDefs.has(name))]));
      } else out[k] = walk(v, inUnion || k === 'anyOf' || k === 'oneOf');
    }
    return out;
  };
  return walk(root, false);
}

/** The compiled serialiser of a zod schema (memoised); null when JSON Schema cannot express it. */
export function compileSerializer(schema: z.ZodType): Serialize | null {
  if (COMPILED.has(schema)) return COMPILED.get(schema)!;
  let out: Serialize | null = null;
  try {
    const json = z.toJSONSchema(schema, { io: 'output', target: 'draft-07', unrepresentable: 'throw' });
    out = fastJson(withoutRequired(json) as Parameters<typeof fastJson>[0]) as Serialize;
  } catch {
    out = null;
  }
  COMPILED.set(schema, out);
  return out;
}

/** The serialiser of a schema for routes that pre-serialise bodies they keep in memory. */
export function serializerFor(schema: z.ZodType): Serialize {
  return compileSerializer(schema) ?? ((data) => JSON.stringify(schema.encode(data as never)));
}

/** Fastify serializer compiler: compiled fast-json-stringify, zod's serialiser as the fallback. */
export const compiledSerializerCompiler: FastifySerializerCompiler<unknown> = (route) => {
  const schema = zodSchemaOf(route.schema);
  const compiled = schema ? compileSerializer(schema) : null;
  if (compiled) return compiled;
  return (zodSerializerCompiler as unknown as FastifySerializerCompiler<unknown>)(route);
};

/** Sends an already serialised JSON body (the route's response schema was applied when it was made); a Buffer is sent as it is, with no conversion per request. */
export function sendJson(reply: FastifyReply, body: string | Buffer): FastifyReply {
  return reply.header('content-type', 'application/json; charset=utf-8').send(body);
}
