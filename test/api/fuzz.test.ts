/**
 * Fuzz test over every operation of /openapi.json (read from a built app with PostgreSQL, Temporal
 * and a localnet, so the ledger routes exist): malformed and random path parameters, query strings,
 * headers (signature, payment, request id, content type) and bodies. No answer may be 5xx, except
 * 503 service_unavailable (a dependency deliberately absent here: no EVM node, no worker); every
 * error body is { error, code, retryable?, hint? } with a catalog code. Bad bytes (issue 26 item 7): a
 * NUL, bytes that are not UTF-8 or a lone surrogate put into the query, a path parameter or the body
 * must be answered 400 invalid_request with the rate-limit headers.
 *
 * Bounded for `npm test` (FUZZ_RUNS, default 8 per operation, within FUZZ_BUDGET_MS); `npm run fuzz`
 * runs a long version (FUZZ_RUNS=500 by default, no time budget).
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { recordSecret } from '../support/secrets.js';
import { isCatalogCode } from '../../domain/errors.js';
import { PROBE_ROUTES } from '../../api/plugins/rateLimit.js';
import { lazyTemporalClient } from '../../temporal/client.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 8);
/**
 * FUZZ_TRANSPORT: `inject` (Fastify's in-process injection, the default for `npm test`) or `http`
 * (a real socket to the listening app with the raw path as generated; `npm run fuzz` uses it).
 */
const TRANSPORT = process.env.FUZZ_TRANSPORT === 'http' ? 'http' : 'inject';
/** FUZZ_REQUESTS (the long run: 100,000) spreads that many requests over the operations instead of FUZZ_RUNS each. */
const REQUESTS = process.env.FUZZ_REQUESTS ? Number(process.env.FUZZ_REQUESTS) : undefined;
/**
 * Time budget of the whole property run in ms (spread evenly over the operations; 0: none). The
 * default keeps the file well under 30 s in `npm test` on a loaded machine; `npm run fuzz` lifts it.
 */
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 15_000);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
/** A request still unanswered after this long counts as a failure (the API must never hang). */
const REQUEST_LIMIT_MS = 30_000;

type Schema = Record<string, any>;

interface Operation {
  method: string;
  path: string;
  pathParams: { name: string; schema: Schema }[];
  query: { name: string; schema: Schema }[];
  body?: Schema;
  hasBody: boolean;
}

/** What the stack offers for plausible values: real accounts, DIDs and the passport token. */
interface Plausible {
  accounts: string[];
  dids: string[];
  tokenId: string;
  adminToken: string;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** a Buffer: bytes that are not UTF-8 (a string would be sent as UTF-8) */
  payload?: string | Buffer;
  /** where bad bytes were put (query, path or body): the answer must be 400 invalid_request */
  badBytes?: string;
}

/** What the checks read of an answer, whatever the transport. */
interface FuzzAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json(): Record<string, unknown>;
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** One request over a real socket; the path goes on the wire exactly as generated. */
function overHttp(port: number, req: { method: string; url: string; headers: Record<string, string>; payload?: string | Buffer }): Promise<FuzzAnswer> {
  return new Promise((resolve, reject) => {
    const body = req.payload === undefined ? undefined : Buffer.from(req.payload);
    const headers: Record<string, string> = { ...req.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
    const r = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent: keepAlive }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) as Record<string, unknown> });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
}

// ---------------------------------------------------------------- generators

const ids = fc.constantFrom('0.0.1', '0.0.1001', '0.0.2', '1.2.3', '0.0.99999999', '0.0.-1', '0', '0.0', '..', '');
const dids = fc.constantFrom('did:hedera:local:0.0.1001', 'did:hedera:testnet:0.0.2', 'did:hedera:local:', 'did:web:example.com', 'did:pkh:eip155:31337:0x0000000000000000000000000000000000000001');
const hostile = fc.constantFrom('%', '%25', '%zz', '%E0%A4%A', '%00', '\u0000', '../../etc/passwd', '<script>', "' or 1=1 --", '${jndi:x}', '\uD800', '🦀', ' ', 'null', 'undefined', '-1', '1e309', 'NaN', '0x10');
const text = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.string({ minLength: 200, maxLength: 3000 }),
  ids,
  dids,
  hostile,
  fc.integer().map(String),
  fc.constantFrom('bronze', 'silver', 'gold', 'platinum', 'diamond'),
);

/** A path segment: mostly percent-encoded values, sometimes raw malformed sequences. */
const segment = fc.oneof(
  { weight: 4, arbitrary: text.map((t) => encodeURIComponent(t.replace(/[\uD800-\uDFFF]/g, 'x'))) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%E0%A4%A', '%C0%AF', 'a%2Fb', '%2e%2e', 'x'.repeat(150)) },
);

/**
 * Bad bytes (issue 26 item 7): percent-encoded for a URL (a NUL, bytes that are not UTF-8: a stray
 * continuation byte, a cut-off character, an overlong encoding, a surrogate encoded as UTF-8), and for
 * a JSON body the same as raw bytes or as escapes (\u0000, a lone surrogate).
 */
const badUrlBytes = fc.constantFrom('%00', 'a%00b', '%FF', '%C3', '%C3%28', '%80', '%C0%AF', '%ED%A0%80', '%F4%90%80%80', 'did%3Ahedera%3Alocal%3A0.0.2%00');
type BadBody = { raw: Buffer } | { escaped: string };
const badBodyBytes = fc.constantFrom<BadBody>(
  { raw: Buffer.from([0x00]) },
  { raw: Buffer.from([0xff]) },
  { raw: Buffer.from([0xc3]) },
  { raw: Buffer.from([0xc0, 0xaf]) },
  { raw: Buffer.from([0xed, 0xa0, 0x80]) },
  { escaped: '\\u0000' },
  { escaped: 'a\\u0000b' },
  { escaped: '\\ud800' },
  { escaped: '\\udfff' },
);

/**
 * A request of the operation with bad bytes in one place: a query value, a path parameter, or (for
 * operations with a body) a string of a JSON body, as raw bytes (not JSON-escaped: the body is then not
 * valid UTF-8) or as a JSON escape. Always 400 invalid_request, whatever else the request gets right.
 */
function badBytesRequestFor(op: Operation, good: fc.Arbitrary<FuzzRequest & { plan: HeaderPlan }>): fc.Arbitrary<FuzzRequest & { plan: HeaderPlan }> {
  const places = ['query', ...(op.pathParams.length ? ['path'] : []), ...(op.hasBody ? ['body'] : [])];
  return fc.record({ req: good, place: fc.constantFrom(...places), url: badUrlBytes, body: badBodyBytes, name: fc.constantFrom(...op.query.map((q) => q.name), 'x') }).map(({ req, place, url, body, name }) => {
    const [path, query] = req.url.split('?') as [string, string | undefined];
    if (place === 'query') return { ...req, url: `${path}?${[query, `${encodeURIComponent(name)}=${url}`].filter(Boolean).join('&')}`, badBytes: `query ${url}` };
    if (place === 'path') {
      const segments = path.split('/');
      const at = op.path.split('/').findIndex((s) => s.startsWith('{'));
      segments[at] = `${segments[at] ?? ''}${url}`;
      return { ...req, url: `${segments.join('/')}${query ? `?${query}` : ''}`, badBytes: `path ${url}` };
    }
    const headers = { ...req.headers, 'content-type': 'application/json' };
    const field = JSON.stringify({ title: 'x' }).slice(0, -2); // {"title":"x
    const payload = 'raw' in body ? Buffer.concat([Buffer.from(field), body.raw, Buffer.from('"}')]) : `${field}${body.escaped}"}`;
    return { ...req, headers, plan: { ...req.plan, alignDid: false }, payload, badBytes: `body ${'raw' in body ? body.raw.toString('hex') : body.escaped}` };
  });
}

const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(text, { maxLength: 20 }),
  fc.dictionary(fc.string({ maxLength: 8 }), text, { maxKeys: 4 }),
  fc.constant(Number.MAX_SAFE_INTEGER + 2),
  fc.constant(-1),
);

/** Values that satisfy (most of) a JSON schema, with plausible ids where the name suggests them. */
function fromSchema(schema: Schema | undefined, doc: Schema, ctx: Plausible, name = '', depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return jsonValue;
  if (schema.$ref) return fromSchema(doc.components?.schemas?.[String(schema.$ref).split('/').pop()!], doc, ctx, name, depth + 1);
  const alts = schema.anyOf ?? schema.oneOf;
  if (alts) return fc.oneof(...alts.map((a: Schema) => fromSchema(a, doc, ctx, name, depth + 1)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const lname = name.toLowerCase();
  switch (schema.type) {
    case 'string': {
      if (lname.includes('did') || lname === 'to' || lname === 'from') return fc.constantFrom(...ctx.dids);
      if (lname.includes('tokenid')) return fc.constantFrom(ctx.tokenId, '0.0.1');
      if (lname === 'address' || lname.includes('account')) return fc.constantFrom(...ctx.accounts, ...ctx.dids);
      if (lname === 'tier') return fc.constantFrom('bronze', 'silver', 'gold', 'platinum', 'diamond');
      if (lname === 'serial') return fc.constantFrom('1', '2', '3', '999');
      if (schema.format === 'uri' || lname.includes('url') || lname.includes('endpoint')) return fc.constantFrom('https://agent.example/a2a', 'http://127.0.0.1:1/x', 'javascript:alert(1)', 'ftp://x.example');
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) });
    }
    case 'integer':
    case 'number':
      return fc.integer({ min: Math.max(schema.minimum ?? -5, -1_000_000), max: Math.min(schema.maximum ?? 1000, 1_000_000) });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(fromSchema(schema.items, doc, ctx, name, depth + 1), { maxLength: Math.min(schema.maxItems ?? 4, 6) });
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required: string[] = schema.required ?? [];
      if (!Object.keys(props).length) return fc.dictionary(fc.string({ maxLength: 8 }), jsonValue, { maxKeys: 3 });
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, fromSchema(v, doc, ctx, k, depth + 1)])), { requiredKeys: required.filter((k) => k in props) });
    }
    default:
      return jsonValue;
  }
}

/** Mostly schema-shaped values (to get past validation), often random or hostile ones. */
function valueFor(schema: Schema | undefined, doc: Schema, ctx: Plausible, name: string): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 3, arbitrary: fromSchema(schema, doc, ctx, name) }, { weight: 2, arbitrary: jsonValue });
}

function bodyFor(op: Operation, doc: Schema, ctx: Plausible): fc.Arbitrary<string | undefined> {
  const shaped = fromSchema(op.body, doc, ctx, 'body');
  const props = Object.entries(((op.body?.$ref ? doc.components?.schemas?.[String(op.body.$ref).split('/').pop()!] : op.body)?.properties ?? {}) as Record<string, Schema>);
  const mixed = props.length
    ? fc.record(Object.fromEntries(props.map(([k, v]) => [k, valueFor(v, doc, ctx, k)])), { requiredKeys: [] })
    : fc.dictionary(fc.string({ maxLength: 10 }), jsonValue, { maxKeys: 3 });
  return fc.oneof(
    { weight: 4, arbitrary: shaped.map((o) => JSON.stringify(o)) },
    { weight: 3, arbitrary: mixed.map((o) => JSON.stringify(o)) },
    { weight: 1, arbitrary: jsonValue.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.constantFrom('{', '{"a":', 'null', '[]', '""', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '') },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

function queryFor(op: Operation, doc: Schema, ctx: Plausible): fc.Arbitrary<string> {
  const known = op.query.map((q) => fc.tuple(fc.constant(q.name), valueFor(q.schema, doc, ctx, q.name).map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? ''))));
  const pair = fc.oneof(...known, fc.tuple(fc.constant('unknownParam'), text), fc.tuple(fc.constantFrom(...op.query.map((q) => q.name), 'x'), fc.constantFrom('-5', '0', '101', '1.5', '99999999999999999999', '1e3')));
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(pair, { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v).replace(/[\uD800-\uDFFF]/g, 'x'))}`).join('&')) },
    { weight: 1, arbitrary: fc.constantFrom('%', 'a=%zz', 'limit=%E0%A4%A', 'a[b]=1', 'limit=1&limit=2', '&&&', '=') },
  );
}

const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  fc.constantFrom('', 'did:hedera:local:0.0.1001', 'ab'.repeat(64), 'x'.repeat(600), '%zz', 'Bearer ', 'Bearer nope'),
  fc.base64String({ maxLength: 200 }),
  fc.constant(Buffer.from(JSON.stringify({ x402Version: 2, payload: { transaction: 'AAAA' }, accepted: {} })).toString('base64')),
);

interface HeaderPlan {
  headers: Record<string, string>;
  /** Replace the signature headers by a real sign-in of this account (index into the test agents). */
  signAs?: number;
  /** With signAs: the body's did (when it has one) names the signer, to get past the DID check. */
  alignDid: boolean;
  admin: boolean;
}

function headersFor(op: Operation, ctx: Plausible): fc.Arbitrary<HeaderPlan> {
  return fc
    .record({
      headers: fc.record(
        {
          'x-service-did': fc.oneof(headerValue, fc.constantFrom(...ctx.dids)),
          'x-service-challenge': headerValue,
          'x-service-signature': headerValue,
          'payment-signature': headerValue,
          'x-payment': headerValue,
          'x-request-id': headerValue,
          authorization: headerValue,
          origin: fc.constantFrom('https://agent.example', 'null', 'http://localhost:8233'),
          'content-type': fc.constantFrom('application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', ''),
        },
        { requiredKeys: [] },
      ),
      signAs: fc.option(fc.nat({ max: 1 }), { freq: 2 }),
      alignDid: fc.boolean(),
      admin: fc.boolean(),
    })
    .map(({ headers: h, signAs, alignDid, admin }) => {
      if (op.hasBody && h['content-type'] === undefined) h['content-type'] = 'application/json';
      if (h['content-type'] === '') delete h['content-type'];
      if (signAs !== null && alignDid) for (const name of ['payment-signature', 'x-payment'] as const) delete h[name];
      return { headers: h, signAs: signAs ?? undefined, alignDid, admin };
    });
}

function requestFor(op: Operation, doc: Schema, ctx: Plausible): fc.Arbitrary<FuzzRequest & { plan: HeaderPlan }> {
  const good = wellFormedRequestFor(op, doc, ctx);
  return fc.oneof({ weight: 5, arbitrary: good }, { weight: 1, arbitrary: badBytesRequestFor(op, good) });
}

function wellFormedRequestFor(op: Operation, doc: Schema, ctx: Plausible): fc.Arbitrary<FuzzRequest & { plan: HeaderPlan }> {
  const param = (p: { name: string; schema: Schema }) =>
    fc.oneof(
      { weight: 3, arbitrary: fromSchema(p.schema, doc, ctx, p.name).map((v) => encodeURIComponent(String(v))) },
      { weight: 2, arbitrary: segment },
    );
  return fc
    .record({
      params: fc.tuple(...op.pathParams.map(param)),
      query: queryFor(op, doc, ctx),
      plan: headersFor(op, ctx),
      payload: op.method === 'GET' ? fc.constant(undefined) : bodyFor(op, doc, ctx),
    })
    .map(({ params, query, plan, payload }) => {
      let i = 0;
      const path = op.path.replace(/\{[^}]+\}/g, () => params[i++] ?? 'x');
      return { method: op.method, url: query ? `${path}?${query}` : path, headers: plan.headers, payload, plan };
    });
}

// ---------------------------------------------------------------- the test

function operationsOf(doc: Schema): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, unknown>)) {
    for (const [method, op] of Object.entries(item as Record<string, Schema>)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = (op.parameters ?? []) as { in: string; name: string; schema: Record<string, unknown> }[];
      const bodySchema = op.requestBody?.content?.['application/json']?.schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema })),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        body: bodySchema,
        hasBody: Boolean(op.requestBody),
      });
    }
  }
  return ops;
}

describe('fuzz: every /openapi.json operation', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let operations: Operation[] = [];
  let doc: Schema;
  let agents: TestAgent[] = [];
  let plausible: Plausible;
  let port = 0;
  const temporal = lazyTemporalClient(testConfig({ TEMPORAL_ADDRESS: inject('temporalAddress') }));
  const admin = randomBytes(16).toString('hex');

  beforeAll(async () => {
    recordSecret('admin token', admin); // for the secrets scan (the codec key is recorded by testConfig)
    stack = await startLedgerStack('fuzz');
    sql = createSql(inject('databaseUrl'), { max: 4 });
    app = await buildTestApp(
      {
        ...stack.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `fuzz-${randomBytes(4).toString('hex')}`, // no worker polls it
        PAYLOAD_CODEC_KEY: randomBytes(32).toString('hex'),
        ADMIN_TOKEN_SHA256: createHash('sha256').update(admin).digest('hex'),
        RATE_LIMIT_MAX: '100000000',
      },
      { sql, ledger: stack.ledger, temporal: temporal.get },
    );
    // No worker polls this task queue: a request that starts a workflow answers 202 after a short wait.
    const state = app.workflowSettings;
    state.workflowWaitMs = 300;
    state.workflowIdScope = `fuzz-${randomBytes(4).toString('hex')}-`;
    if (TRANSPORT === 'http') {
      await app.listen({ host: '127.0.0.1', port: 0 });
      port = (app.server.address() as { port: number }).port;
    }
    doc = (await app.inject('/openapi.json')).json();
    operations = operationsOf(doc);
    const accounts = stack.localnet.config.accounts;
    agents = [accounts.find((a) => a.keyType === 'ED25519')!, accounts.find((a) => a.keyType === 'ECDSA')!];
    plausible = {
      accounts: accounts.map((a) => a.accountId),
      dids: [...accounts.map((a) => a.did), 'did:hedera:testnet:0.0.2', 'did:web:example.com', 'did:pkh:eip155:31337:0x0000000000000000000000000000000000000001'],
      tokenId: stack.deployment.passportTokenId,
      adminToken: admin,
    };
  }, 180_000);
  afterAll(async () => {
    keepAlive.destroy();
    await app?.close();
    await temporal.close();
    await sql?.end();
    await stack?.stop();
  });

  it('finds the operations, ledger routes included', () => {
    const paths = operations.map((o) => `${o.method} ${o.path}`);
    expect(paths).toEqual(expect.arrayContaining(['GET /did/{did}', 'GET /passport/address/{address}', 'POST /passport/request', 'POST /admin/revoke', 'GET /auth/challenge']));
  });

  it(`no 5xx (but 503 service_unavailable) and every error in the error schema (${REQUESTS ? `${REQUESTS} requests` : `${RUNS} runs per operation`})`, async () => {
    const runs = REQUESTS ? Math.ceil(REQUESTS / operations.length) : RUNS;
    const startedAll = Date.now();
    let sent = 0;
    let badBytesSent = 0;
    const failures: string[] = [];
    const unavailable = new Map<string, number>();
    const outcomes = new Map<string, number>();
    for (const op of operations) {
      const started = Date.now();
      await fc.assert(
        fc.asyncProperty(requestFor(op, doc, plausible), async (req) => {
          const headers = { ...req.headers };
          let payload = req.payload;
          if (req.plan.signAs !== undefined) {
            const signer = agents[req.plan.signAs];
            Object.assign(headers, await signedHeaders(app, signer));
            const body = typeof payload === 'string' ? safeJson(payload) : undefined;
            if (req.plan.alignDid && body && typeof body === 'object' && !Array.isArray(body) && 'did' in body) payload = JSON.stringify({ ...body, did: signer.did });
          }
          if (req.plan.admin) headers.authorization = `Bearer ${admin}`;
          let timer: NodeJS.Timeout | undefined;
          const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), REQUEST_LIMIT_MS)));
          sent++;
          const answer: Promise<FuzzAnswer> =
            TRANSPORT === 'http'
              ? overHttp(port, { method: req.method, url: req.url, headers, payload })
              : app.inject({ method: req.method as 'GET', url: req.url, headers, payload }).then((r) => ({ statusCode: r.statusCode, headers: r.headers as FuzzAnswer['headers'], body: r.body, json: () => r.json() as Record<string, unknown> }));
          const res = await Promise.race([answer, hung])
            .catch((err: NodeJS.ErrnoException) => `no answer: ${err.code ?? err.message}` as const)
            .finally(() => clearTimeout(timer));
          if (typeof res === 'string') {
            const why = res === 'hung' ? `no answer within ${REQUEST_LIMIT_MS} ms` : res;
            failures.push(`${req.method} ${req.url.slice(0, 200)}: ${why} (body ${String(payload).slice(0, 200)})`);
            return false;
          }
          const where = `${req.method} ${req.url.slice(0, 200)} -> ${res.statusCode}`;
          const code = res.statusCode >= 400 || res.statusCode === 202 ? String((safeJson(res.body) as { code?: unknown } | undefined)?.code) : '';
          const key = `${op.method} ${op.path} ${res.statusCode} ${code}`.trim();
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
          if (req.badBytes) {
            badBytesSent++;
            // the one other answer: an admin route refuses a caller without the token before it reads any body
            const refused = (res.statusCode === 400 && code === 'invalid_request') || (req.badBytes.startsWith('body') && /^admin_auth_/.test(code));
            if (!refused) {
              failures.push(`${where} (bad bytes in the ${req.badBytes}): expected 400 invalid_request, got ${res.statusCode} ${code}`);
              return false;
            }
            // (the probes are never limited nor counted, so they carry none: api/plugins/rateLimit.ts)
            if (res.headers['x-ratelimit-limit'] === undefined && !PROBE_ROUTES.has(op.path)) {
              failures.push(`${where} (bad bytes in the ${req.badBytes}): no rate-limit headers`);
              return false;
            }
          }
          if (res.statusCode >= 500 && res.statusCode !== 503) {
            failures.push(`${where} ${res.body.slice(0, 300)}`);
            return false;
          }
          if (res.statusCode >= 400 || res.statusCode === 202) {
            let body: Record<string, unknown>;
            try {
              body = res.json();
            } catch {
              failures.push(`${where}: body is not JSON: ${res.body.slice(0, 200)}`);
              return false;
            }
            const ok =
              typeof body.error === 'string' &&
              typeof body.code === 'string' &&
              isCatalogCode(body.code) &&
              (body.retryable === undefined || typeof body.retryable === 'boolean') &&
              (body.hint === undefined || typeof body.hint === 'string');
            if (!ok) {
              failures.push(`${where}: not in the error schema: ${res.body.slice(0, 200)}`);
              return false;
            }
            if (res.statusCode === 503) {
              if (body.code !== 'service_unavailable') {
                failures.push(`${where}: 503 with code ${String(body.code)}`);
                return false;
              }
              unavailable.set(`${op.method} ${op.path}`, (unavailable.get(`${op.method} ${op.path}`) ?? 0) + 1);
            }
          }
          return true;
        }),
        {
          numRuns: runs,
          seed: SEED,
          endOnFailure: true,
          ...(BUDGET_MS > 0 ? { interruptAfterTimeLimit: Math.max(200, Math.floor(BUDGET_MS / operations.length)), markInterruptAsFailure: false } : {}),
        },
      ).catch(() => {
        /* collected in failures; keep fuzzing the other operations */
      });
      if (process.env.FUZZ_VERBOSE) console.log(`fuzz: ${op.method} ${op.path}: ${Date.now() - started} ms`);
    }
    const seconds = (Date.now() - startedAll) / 1000;
    const byStatus = new Map<string, number>();
    for (const [key, n] of outcomes) {
      const status = key.split(' ')[2]!;
      byStatus.set(status, (byStatus.get(status) ?? 0) + n);
    }
    const statuses = [...byStatus.entries()].sort().map(([status, n]) => `${status}: ${n}`).join(', ');
    console.log(`fuzz (${TRANSPORT}): ${operations.length} operations x ${runs} runs: ${sent} requests (${badBytesSent} with bad bytes) in ${seconds.toFixed(0)} s, ${failures.length} failures; answers by status: ${statuses}`);
    if (process.env.FUZZ_VERBOSE) console.log([...outcomes.entries()].sort().map(([k, v]) => `${k}: ${v}`).join('\n'));
    if (unavailable.size) console.log('fuzz: 503 service_unavailable answers (absent dependency):', Object.fromEntries(unavailable));
    expect(failures).toEqual([]);
  }, 120_000 + (REQUESTS ?? RUNS * 100) * 30);
});
