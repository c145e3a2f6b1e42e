// Task result verifiers (domain/verifiers.ts) and the runTaskVerifier activity: none, sha256,
// json_schema (ajv, size cap, no remote $ref) and http (POST through the SSRF guard) against a local
// server, plus a refused private address when the address rule is on.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundReasons, compileSchema, parseHttpVerifierAnswer, parseVerifierConfig, runLocalVerifier, VERIFIER_SCHEMA_MAX_BYTES } from '../../domain/verifiers.js';
import { sha256Hex } from '../../domain/hash.js';
import { createMarketVerifierActivities } from '../../activities/web/marketVerifier.js';
import type { TaskVerifierInput } from '../../workflows/contracts/taskLifecycle.js';

const body = '{"answer":42,"items":["a","b"]}';
const subject = { resultBody: body, resultIpfs: null, resultSha256: sha256Hex(body) };
const ipfsOnly = { resultBody: null, resultIpfs: 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi', resultSha256: null };

describe('verifierConfig at posting', () => {
  it('accepts each type with a valid config and normalises it', () => {
    expect(parseVerifierConfig('none', undefined)).toEqual({ ok: true, config: null });
    expect(parseVerifierConfig('none', {})).toEqual({ ok: true, config: null });
    expect(parseVerifierConfig('sha256', null)).toEqual({ ok: true, config: null });
    expect(parseVerifierConfig('sha256', { sha256: sha256Hex(body).toUpperCase() })).toEqual({ ok: true, config: { sha256: sha256Hex(body) } });
    expect(parseVerifierConfig('json_schema', { schema: { type: 'object' } })).toEqual({ ok: true, config: { schema: { type: 'object' } } });
    expect(parseVerifierConfig('http', { url: 'https://verifier.example/check' })).toEqual({ ok: true, config: { url: 'https://verifier.example/check' } });
  });

  it('refuses wrong configs with a message', () => {
    const refused = (r: ReturnType<typeof parseVerifierConfig>) => (r.ok ? 'accepted' : r.message);
    expect(refused(parseVerifierConfig('none', { url: 'x' }))).toMatch(/empty/);
    expect(refused(parseVerifierConfig('sha256', { sha256: 'abc' }))).toMatch(/64 hex/);
    expect(refused(parseVerifierConfig('sha256', { sha256: sha256Hex(body), extra: 1 }))).toMatch(/unknown field/);
    expect(refused(parseVerifierConfig('json_schema', undefined))).toMatch(/object/);
    expect(refused(parseVerifierConfig('json_schema', { schema: 'nope' }))).toMatch(/JSON Schema object/);
    expect(refused(parseVerifierConfig('json_schema', { schema: { type: 'no-such-type' } }))).toMatch(/does not compile/);
    expect(refused(parseVerifierConfig('json_schema', { schema: { $ref: 'https://evil.example/schema.json' } }))).toMatch(/only local \$ref/);
    expect(refused(parseVerifierConfig('json_schema', { schema: { properties: { a: { $ref: 'other.json#/x' } } } }))).toMatch(/only local \$ref/);
    const huge = { type: 'object', description: 'x'.repeat(VERIFIER_SCHEMA_MAX_BYTES) };
    expect(refused(parseVerifierConfig('json_schema', { schema: huge }))).toMatch(/over 16384 bytes/);
    expect(refused(parseVerifierConfig('http', { url: 'ftp://verifier.example/' }))).toMatch(/http\(s\)/);
    expect(refused(parseVerifierConfig('http', { url: 'https://user:pw@verifier.example/' }))).toMatch(/credentials/);
    expect(refused(parseVerifierConfig('http', {}))).toMatch(/URL/);
  });
});

describe('local verifiers', () => {
  it('none passes', () => {
    expect(runLocalVerifier('none', null, subject)).toEqual({ passed: true, reasons: [] });
  });

  it('sha256: the expected hash must match the result; a different result fails with both hashes', () => {
    expect(runLocalVerifier('sha256', { sha256: sha256Hex(body) }, subject)).toEqual({ passed: true, reasons: [] });
    expect(runLocalVerifier('sha256', null, subject)).toEqual({ passed: true, reasons: [] });
    const wrong = runLocalVerifier('sha256', { sha256: sha256Hex('something else') }, subject);
    expect(wrong.passed).toBe(false);
    expect(wrong.reasons[0]).toContain(sha256Hex(body));
    const badRecord = runLocalVerifier('sha256', null, { ...subject, resultSha256: sha256Hex('x') });
    expect(badRecord.passed).toBe(false);
    expect(runLocalVerifier('sha256', { sha256: sha256Hex(body) }, ipfsOnly).passed).toBe(false);
  });

  it('json_schema: valid JSON that validates passes; invalid JSON, a failing document and ipfs-only results fail with reasons', () => {
    const schema = { type: 'object', required: ['answer'], properties: { answer: { type: 'integer', minimum: 0 }, items: { type: 'array', items: { $ref: '#/$defs/item' } } }, $defs: { item: { type: 'string' } } };
    expect(runLocalVerifier('json_schema', { schema }, subject)).toEqual({ passed: true, reasons: [] });
    const failing = runLocalVerifier('json_schema', { schema }, { ...subject, resultBody: '{"answer":-1,"items":[1]}' });
    expect(failing.passed).toBe(false);
    expect(failing.reasons.join(' ')).toMatch(/\/answer/);
    expect(failing.reasons.join(' ')).toMatch(/\/items\/0/);
    expect(runLocalVerifier('json_schema', { schema }, { ...subject, resultBody: 'not json' })).toEqual({ passed: false, reasons: ['resultBody is not JSON'] });
    expect(runLocalVerifier('json_schema', { schema }, ipfsOnly).passed).toBe(false);
  });

  it('json_schema: 2020-12 schemas are compiled by the 2020 dialect; two schemas with the same $id never collide', () => {
    const s2020 = { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: 'https://x.example/s', type: 'array', prefixItems: [{ type: 'integer' }], items: false };
    expect(runLocalVerifier('json_schema', { schema: s2020 }, { ...subject, resultBody: '[1]' }).passed).toBe(true);
    expect(runLocalVerifier('json_schema', { schema: s2020 }, { ...subject, resultBody: '[1,2]' }).passed).toBe(false);
    const other = { $id: 'https://x.example/s', type: 'string' };
    expect(compileSchema(other).ok).toBe(true);
    expect(runLocalVerifier('json_schema', { schema: other }, { ...subject, resultBody: '"ok"' }).passed).toBe(true);
  });

  it('reasons are bounded in number and length', () => {
    const many = Array.from({ length: 50 }, (_, i) => `r${i}`.padEnd(500, 'x'));
    const out = boundReasons([...many, 7, null]);
    expect(out).toHaveLength(20);
    expect(out.every((r) => r.length <= 200)).toBe(true);
  });

  it('an http verifier answer must be 2xx JSON with a boolean passed', () => {
    expect(parseHttpVerifierAnswer(200, '{"passed":true}')).toEqual({ passed: true, reasons: [] });
    expect(parseHttpVerifierAnswer(200, '{"passed":false,"reasons":["too short"]}')).toEqual({ passed: false, reasons: ['too short'] });
    expect(parseHttpVerifierAnswer(500, '{"passed":true}').passed).toBe(false);
    expect(parseHttpVerifierAnswer(200, '<html>').passed).toBe(false);
    expect(parseHttpVerifierAnswer(200, '{"passed":"yes"}').passed).toBe(false);
  });
});

describe('runTaskVerifier activity, http', () => {
  let server: http.Server;
  let base: string;
  const received: { method?: string; contentType?: string; body: unknown }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: { resultBody?: string } = {};
        try {
          parsed = JSON.parse(text);
        } catch {
          // recorded as the raw text below
        }
        received.push({ method: req.method, contentType: req.headers['content-type'], body: parsed });
        if (req.url === '/redirect') {
          res.writeHead(307, { location: '/check' }).end();
          return;
        }
        if (req.url === '/broken') {
          res.writeHead(500).end('oops');
          return;
        }
        const ok = typeof parsed.resultBody === 'string' && parsed.resultBody.includes('42');
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ passed: ok, reasons: ok ? [] : ['no 42 in the result'] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  const input = (url: string, resultBody: string | null = body): TaskVerifierInput => ({
    taskId: '0190a6b2-3c4d-7e8f-9a0b-1c2d3e4f5a6b',
    verifierType: 'http',
    verifierConfig: { url },
    resultBody,
    resultIpfs: null,
    resultSha256: resultBody ? sha256Hex(resultBody) : null,
    attempt: 2,
  });

  it('POSTs the result as JSON to the poster URL and returns its verdict (TRUST_ALLOW_PRIVATE)', async () => {
    const { runTaskVerifier } = createMarketVerifierActivities({ allowPrivate: true });
    received.length = 0;
    expect(await runTaskVerifier(input(`${base}/check`))).toEqual({ passed: true, reasons: [] });
    expect(received[0]).toEqual({
      method: 'POST',
      contentType: 'application/json',
      body: { taskId: '0190a6b2-3c4d-7e8f-9a0b-1c2d3e4f5a6b', attempt: 2, resultBody: body, resultIpfs: null, resultSha256: sha256Hex(body) },
    });
    expect(await runTaskVerifier(input(`${base}/check`, '{"answer":7}'))).toEqual({ passed: false, reasons: ['no 42 in the result'] });
  });

  it('follows a 307 with the same POST, and a 500 is a failed verification', async () => {
    const { runTaskVerifier } = createMarketVerifierActivities({ allowPrivate: true });
    received.length = 0;
    expect((await runTaskVerifier(input(`${base}/redirect`))).passed).toBe(true);
    expect(received.map((r) => r.method)).toEqual(['POST', 'POST']);
    // no verdict: inconclusive, so a later verify of the delivery may run it again (issue 20 item 4)
    expect(await runTaskVerifier(input(`${base}/broken`))).toEqual({ passed: false, reasons: ['the verifier answered HTTP 500'], inconclusive: true });
  });

  it('refuses a private address when the address rule is on, without sending anything', async () => {
    const { runTaskVerifier } = createMarketVerifierActivities({ allowPrivate: false });
    received.length = 0;
    const out = await runTaskVerifier(input(`${base}/check`));
    expect(out.passed).toBe(false);
    expect(out.reasons[0]).toMatch(/address_refused/);
    expect(received).toHaveLength(0);
  });

  it('an unreachable verifier is a failed verification, not an activity error', async () => {
    const { runTaskVerifier } = createMarketVerifierActivities({ allowPrivate: true, timeoutMs: 2_000 });
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const out = await runTaskVerifier(input(`http://127.0.0.1:${port}/check`));
    expect(out.passed).toBe(false);
    expect(out.reasons[0]).toMatch(/could not be reached \(network\)/);
  });

  it('json_schema validates in a worker thread: the same verdicts, and a catastrophic pattern ends at the deadline', async () => {
    const { runTaskVerifier } = createMarketVerifierActivities({ allowPrivate: false, jsonSchemaDeadlineMs: 1_000 });
    const run = (schema: unknown, resultBody: string) => runTaskVerifier({ ...input('unused', resultBody), verifierType: 'json_schema', verifierConfig: { schema } });
    const schema = { type: 'object', required: ['answer'], properties: { answer: { type: 'integer' } } };
    expect(await run(schema, '{"answer":42}')).toEqual({ passed: true, reasons: [] });
    expect(await run(schema, '{"answer":"x"}')).toEqual({ passed: false, reasons: ['/answer must be integer'] });
    expect(await run({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'integer' }], items: false }, '[1,2]')).toMatchObject({ passed: false });
    // (a+)+$ against 'aaaa...!' backtracks exponentially: without the thread this would hold the event loop
    const evil = { type: 'string', pattern: '^(a+)+$' };
    const out = await run(evil, JSON.stringify(`${'a'.repeat(40)}!`));
    expect(out.passed).toBe(false);
    expect(out.reasons[0]).toMatch(/did not finish validating within 1000 ms/);
  });

  it('none, sha256 and json_schema run without the network', async () => {
    const { runTaskVerifier } = createMarketVerifierActivities({ allowPrivate: false });
    const local = (verifierType: TaskVerifierInput['verifierType'], verifierConfig: Record<string, unknown> | null) =>
      runTaskVerifier({ ...input('unused'), verifierType, verifierConfig });
    expect(await local('none', null)).toEqual({ passed: true, reasons: [] });
    expect(await local('sha256', { sha256: sha256Hex(body) })).toEqual({ passed: true, reasons: [] });
    expect((await local('json_schema', { schema: { type: 'array' } })).passed).toBe(false);
  });
});
