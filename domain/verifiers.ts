/**
 * Task result verifiers (DESIGN.md 6 "Verification", 10 "Marketplace"): none | sha256 | json_schema |
 * http, configured at posting (verifierType + verifierConfig), run on a delivered task by verify. A
 * verifier answers { passed, reasons }; it never completes a task or moves money.
 *
 *   none         passes.
 *   sha256       { sha256?: hex }: the sha256 of resultBody must equal the poster's expected hash
 *                (verifierConfig.sha256) and the resultSha256 recorded at delivery; without an
 *                expected hash it checks the recorded resultSha256 against resultBody. A result given
 *                only as resultIpfs cannot be hashed here and does not pass.
 *   json_schema  { schema }: resultBody parses as JSON and validates (ajv 8; draft-07 by default,
 *                2020-12 when $schema names it). The schema is at most 16 KB of JSON, compiled at
 *                posting so a broken one is refused then; only local $ref ("#...") is allowed, so
 *                nothing is fetched; "format" keywords are not checked.
 *   http         { url }: the result is POSTed to the poster's URL through the SSRF guard
 *                (activities/web/marketVerifier.ts); the answer must be JSON { passed, reasons? }.
 *
 * Pure (no I/O). Uses ajv, so it is imported by the API and the activities, never by workflow code.
 */
import AjvModule, { type ValidateFunction } from 'ajv';
import Ajv2020Module from 'ajv/dist/2020.js';
import type { VerifierType } from './market.js';
import { sha256Hex } from './hash.js';

export const VERIFIER_SCHEMA_MAX_BYTES = 16 * 1024;
export const VERIFIER_URL_MAX = 512;
/** reasons returned by a verifier: at most this many, each cut to REASON_MAX_CHARS */
export const REASONS_MAX = 20;
export const REASON_MAX_CHARS = 200;

export interface VerifierOutcome {
  passed: boolean;
  reasons: string[];
  /** the verifier gave no verdict (http: unreachable, not 2xx, no boolean "passed"): a later verify may run it again */
  inconclusive?: boolean;
}

export interface VerifierSubject {
  resultBody: string | null;
  resultIpfs: string | null;
  resultSha256: string | null;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Cuts a verifier's reasons to the bounds above; non-strings are dropped. */
export function boundReasons(reasons: unknown): string[] {
  if (!Array.isArray(reasons)) return [];
  return reasons
    .filter((r): r is string => typeof r === 'string')
    .slice(0, REASONS_MAX)
    .map((r) => (r.length > REASON_MAX_CHARS ? `${r.slice(0, REASON_MAX_CHARS - 1)}…` : r));
}

// ------------------------------------------------------------------ configuration (checked at posting)

export type VerifierConfigResult = { ok: true; config: Record<string, unknown> | null } | { ok: false; message: string };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks and normalises the verifierConfig posted with a verifierType; the message of a refusal is
 * safe to show (400). Unknown config fields are refused.
 */
export function parseVerifierConfig(type: VerifierType, config: unknown): VerifierConfigResult {
  const bad = (message: string): VerifierConfigResult => ({ ok: false, message });
  const only = (c: Record<string, unknown>, keys: string[]) => Object.keys(c).filter((k) => !keys.includes(k));
  switch (type) {
    case 'none':
      if (config == null || (isPlainObject(config) && Object.keys(config).length === 0)) return { ok: true, config: null };
      return bad('verifierConfig must be empty for verifierType none');
    case 'sha256': {
      if (config == null) return { ok: true, config: null };
      if (!isPlainObject(config)) return bad('verifierConfig must be an object { sha256? }');
      const extra = only(config, ['sha256']);
      if (extra.length) return bad(`verifierConfig has unknown field(s) ${extra.join(', ')}`);
      if (config.sha256 === undefined) return { ok: true, config: null };
      if (typeof config.sha256 !== 'string' || !HEX64.test(config.sha256.toLowerCase())) return bad('verifierConfig.sha256 must be 64 hex characters');
      return { ok: true, config: { sha256: config.sha256.toLowerCase() } };
    }
    case 'json_schema': {
      if (!isPlainObject(config)) return bad('verifierConfig must be an object { schema }');
      const extra = only(config, ['schema']);
      if (extra.length) return bad(`verifierConfig has unknown field(s) ${extra.join(', ')}`);
      const compiled = compileSchema(config.schema);
      if (!compiled.ok) return bad(`verifierConfig.schema: ${compiled.message}`);
      return { ok: true, config: { schema: config.schema } };
    }
    case 'http': {
      if (!isPlainObject(config)) return bad('verifierConfig must be an object { url }');
      const extra = only(config, ['url']);
      if (extra.length) return bad(`verifierConfig has unknown field(s) ${extra.join(', ')}`);
      if (typeof config.url !== 'string' || config.url.length > VERIFIER_URL_MAX) return bad(`verifierConfig.url must be an http(s) URL of at most ${VERIFIER_URL_MAX} characters`);
      let url: URL;
      try {
        url = new URL(config.url);
      } catch {
        return bad('verifierConfig.url is not a URL');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return bad('verifierConfig.url must be http(s)');
      if (url.username || url.password) return bad('verifierConfig.url must not carry credentials');
      return { ok: true, config: { url: url.toString() } };
    }
  }
}

// ------------------------------------------------------------------ json_schema

type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; message: string };

/** ajv settings of every json_schema verifier (also used by the worker-thread sandbox) */
export const AJV_OPTIONS = { allErrors: true, strict: false, validateFormats: false } as const;
// ajv is CommonJS: under NodeNext its classes are the modules' `default` export
const Ajv = AjvModule.default;
const Ajv2020 = Ajv2020Module.default;
/** compiled validators by schema text (bounded) */
const cache = new Map<string, Compiled>();
const CACHE_MAX = 256;

/** Every $ref in the schema is local ("#..."): nothing is ever fetched or resolved elsewhere. */
function remoteRef(node: unknown, depth = 0): string | null {
  if (depth > 64) return '(nesting deeper than 64)';
  if (Array.isArray(node)) {
    for (const n of node) {
      const r = remoteRef(n, depth + 1);
      if (r) return r;
    }
    return null;
  }
  if (!isPlainObject(node)) return null;
  for (const [k, v] of Object.entries(node)) {
    if ((k === '$ref' || k === '$dynamicRef' || k === '$recursiveRef') && (typeof v !== 'string' || !v.startsWith('#'))) return String(v).slice(0, 80);
    const r = remoteRef(v, depth + 1);
    if (r) return r;
  }
  return null;
}

export function compileSchema(schema: unknown): Compiled {
  if (!isPlainObject(schema) && typeof schema !== 'boolean') return { ok: false, message: 'must be a JSON Schema object' };
  const text = JSON.stringify(schema);
  if (Buffer.byteLength(text, 'utf8') > VERIFIER_SCHEMA_MAX_BYTES) return { ok: false, message: `is over ${VERIFIER_SCHEMA_MAX_BYTES} bytes` };
  const hit = cache.get(text);
  if (hit) return hit;
  const ref = remoteRef(schema);
  let out: Compiled;
  if (ref) {
    out = { ok: false, message: `only local $ref ("#/...") is allowed, got ${JSON.stringify(ref)}` };
  } else {
    const $schema = isPlainObject(schema) && typeof schema.$schema === 'string' ? schema.$schema : '';
    try {
      // one ajv instance per schema: two posters' schemas naming the same $id never meet in a registry
      const engine = /2020-12/.test($schema) ? new Ajv2020(AJV_OPTIONS) : new Ajv(AJV_OPTIONS);
      out = { ok: true, validate: engine.compile(schema as object) };
    } catch (err) {
      out = { ok: false, message: `does not compile: ${(err as Error).message.slice(0, 160)}` };
    }
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(text, out);
  return out;
}

function ajvReasons(validate: ValidateFunction): string[] {
  return ajvErrorReasons(validate.errors ?? []);
}

/** ajv errors as bounded reasons: "<instance path> <message>". */
export function ajvErrorReasons(errors: { instancePath?: string; message?: string }[]): string[] {
  return boundReasons(errors.map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`));
}

// ------------------------------------------------------------------ the local verifiers

/** Runs none, sha256 or json_schema; http is run by the activity (it needs the network). */
export function runLocalVerifier(type: Exclude<VerifierType, 'http'>, config: Record<string, unknown> | null, subject: VerifierSubject): VerifierOutcome {
  switch (type) {
    case 'none':
      return { passed: true, reasons: [] };
    case 'sha256': {
      if (subject.resultBody == null) return { passed: false, reasons: ['the result is only a resultIpfs reference; sha256 verification needs resultBody'] };
      const actual = sha256Hex(subject.resultBody);
      const reasons: string[] = [];
      const expected = typeof config?.sha256 === 'string' ? config.sha256.toLowerCase() : null;
      if (expected && actual !== expected) reasons.push(`sha256 of resultBody is ${actual}, the poster expects ${expected}`);
      if (subject.resultSha256 && subject.resultSha256.toLowerCase() !== actual) reasons.push(`resultSha256 ${subject.resultSha256} does not match resultBody (${actual})`);
      if (!expected && !subject.resultSha256) reasons.push('no expected sha256 and no resultSha256 to compare with');
      return { passed: reasons.length === 0, reasons };
    }
    case 'json_schema': {
      const inputs = jsonSchemaInputs(config, subject);
      if ('outcome' in inputs) return inputs.outcome;
      const passed = inputs.validate(inputs.value) === true;
      return { passed, reasons: passed ? [] : ajvReasons(inputs.validate) };
    }
  }
}

export interface JsonSchemaInputs {
  schema: unknown;
  /** draft-07 unless $schema names 2020-12 */
  dialect: '07' | '2020';
  /** resultBody parsed */
  value: unknown;
  validate: ValidateFunction;
}

/**
 * What a json_schema verification needs, or its outcome when it fails before validating (no
 * resultBody, a schema that does not compile, resultBody not JSON). Compiling runs no pattern
 * against client data; validating does (a poster's regular expression on a claimer's result), so the
 * activity validates in a worker thread with a deadline (activities/web/jsonSchemaSandbox.ts).
 */
export function jsonSchemaInputs(config: Record<string, unknown> | null, subject: VerifierSubject): JsonSchemaInputs | { outcome: VerifierOutcome } {
  if (subject.resultBody == null) return { outcome: { passed: false, reasons: ['the result is only a resultIpfs reference; json_schema verification needs resultBody'] } };
  const compiled = compileSchema(config?.schema);
  if (!compiled.ok) return { outcome: { passed: false, reasons: [`verifierConfig.schema ${compiled.message}`] } };
  let value: unknown;
  try {
    value = JSON.parse(subject.resultBody);
  } catch {
    return { outcome: { passed: false, reasons: ['resultBody is not JSON'] } };
  }
  const schema = config!.schema;
  const $schema = isPlainObject(schema) && typeof schema.$schema === 'string' ? schema.$schema : '';
  return { schema, dialect: /2020-12/.test($schema) ? '2020' : '07', value, validate: compiled.validate };
}

/** Reads an http verifier's answer: JSON { passed: boolean, reasons?: string[] } from a 2xx response. */
export function parseHttpVerifierAnswer(status: number, body: Buffer | string): VerifierOutcome {
  if (status < 200 || status > 299) return { passed: false, reasons: [`the verifier answered HTTP ${status}`], inconclusive: true };
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return { passed: false, reasons: ['the verifier answer is not JSON'], inconclusive: true };
  }
  if (!isPlainObject(parsed) || typeof parsed.passed !== 'boolean') return { passed: false, reasons: ['the verifier answer has no boolean "passed"'], inconclusive: true };
  return { passed: parsed.passed, reasons: boundReasons(parsed.reasons) };
}
