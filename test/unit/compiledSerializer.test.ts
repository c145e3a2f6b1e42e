/**
 * The compiled response serialisers (api/serializer.ts) write the same bytes as the zod serialiser
 * they replaced (zod encode + JSON.stringify) for every response schema in api/schemas/, on values
 * generated from the schemas themselves (fast-check), with properties in any order and with extra
 * properties that the schema drops or (for .loose() schemas) keeps. (Extra keys that look like array
 * indexes are left out: JavaScript puts them first in any object, a case no route produces.)
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { compileSerializer } from '../../api/serializer.js';

type Json = Record<string, any>;

/** fast-check arbitrary of the values a draft-07 JSON Schema (as zod emits it) accepts. */
function arbitraryOf(schema: Json, defs: Json, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref) return arbitraryOf(defs[String(schema.$ref).replace('#/definitions/', '')], defs, depth);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const alts = schema.anyOf ?? schema.oneOf;
  if (alts) return fc.oneof(...(alts as Json[]).map((s) => arbitraryOf(s, defs, depth)));
  if (Array.isArray(schema.type)) return fc.oneof(...(schema.type as string[]).map((t) => arbitraryOf({ ...schema, type: t }, defs, depth)));
  switch (schema.type) {
    case 'string':
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern as string));
      return fc.string({ unit: 'binary', maxLength: 12 }); // any code units, lone surrogates and controls included
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1e15, -1e15), max: Math.min(schema.maximum ?? 1e15, 1e15) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, ...(schema.minimum !== undefined ? { min: schema.minimum } : {}), ...(schema.maximum !== undefined ? { max: schema.maximum } : {}) });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
    {
      // the schema's own bounds (an empty-only array, max(0), must stay empty), at most 3 items otherwise
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 3, 3));
      if (maxLength === 0 || (depth > 3 && minLength === 0)) return fc.constant([]);
      return fc.array(arbitraryOf(schema.items ?? {}, defs, depth + 1), { minLength, maxLength });
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Json;
      const required = new Set<string>(schema.required ?? []);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, s] of Object.entries(props)) model[k] = arbitraryOf(s as Json, defs, depth + 1);
      const known = fc.record(model, { requiredKeys: [...required].filter((k) => k in model) });
      const extraValues = typeof schema.additionalProperties === 'object' && Object.keys(schema.additionalProperties).length > 0
        ? arbitraryOf(schema.additionalProperties, defs, depth + 1)
        : fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.boolean(), fc.constant(null), fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }));
      const extras = fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }).filter((k) => !(k in props) && k !== '__proto__' && !/^\d+$/.test(k)), extraValues, { maxKeys: 2 });
      return fc.tuple(known, extras, fc.boolean()).map(([k, e, reverse]) => {
        const entries = [...Object.entries(k as Json), ...Object.entries(e)];
        return Object.fromEntries(reverse ? entries.reverse() : entries);
      });
    }
    default:
      return fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.constant(null));
  }
}

const here = path.dirname(fileURLToPath(import.meta.url));
const schemasDir = path.join(here, '..', '..', 'api', 'schemas');

async function responseSchemas(): Promise<Array<[string, z.ZodType]>> {
  const out: Array<[string, z.ZodType]> = [];
  for (const file of readdirSync(schemasDir).filter((f) => f.endsWith('.ts'))) {
    const mod = (await import(path.join(schemasDir, file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      const input = /Query|Params|Request/.test(name) || (/BodySchema$/.test(name) && name !== 'errorBodySchema');
      if (value instanceof z.ZodObject && !input) out.push([`${file}:${name}`, value]);
    }
  }
  return out;
}

describe('compiled serialisers write what zod + JSON.stringify wrote', async () => {
  const schemas = await responseSchemas();

  it('finds the response schemas', () => {
    expect(schemas.map(([n]) => n)).toEqual(expect.arrayContaining(['passports.ts:passportSchema', 'common.ts:errorBodySchema']));
  });

  it.each(schemas)('%s', (_name, schema) => {
    const compiled = compileSerializer(schema);
    expect(compiled, 'compiles').not.toBeNull();
    const json = z.toJSONSchema(schema, { io: 'output', target: 'draft-07' }) as Json;
    const root = json.$ref ? json.definitions[String(json.$ref).replace('#/definitions/', '')] : json;
    fc.assert(
      fc.property(arbitraryOf(root, json.definitions ?? {}), (value) => {
        const viaZod = JSON.stringify(schema.encode(value as never));
        expect(compiled!(value)).toBe(viaZod);
      }),
      { numRuns: 150 },
    );
    // 150 generated values per schema: seconds on a loaded two-core machine, never a timing assertion
  }, 60_000);
});
