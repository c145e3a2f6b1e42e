// The pure parts of the trust snapshots (domain/trust/): RFC 8785 canonical JSON, the evidence
// Merkle tree (known answers computed independently with Python's hashlib), score and grade,
// the rule catalog and its evaluations, the profile hash, and the Ed25519 signer.
import { createHash, createPrivateKey, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalHash, canonicalJson, sha256Hex } from '../../domain/trust/canonical.js';
import { merkleRoot } from '../../domain/trust/merkle.js';
import { evaluateRules, PROBE_IDS, PROBES, PUBLIC_RULES, robotsBlocksEveryone, TRUST_RULES, type ProbeId, type ProbeOutcome } from '../../domain/trust/rules.js';
import { evidenceHash, gradeFor, PROFILE_DOCUMENT, PROFILE_HASH, scoreSummary, snapshotHash } from '../../domain/trust/snapshot.js';
import { makeTrustSigner, verifySnapshotSignature } from '../../api/trust/signingKey.js';
import { isEd25519PrivateKey, loadConfig } from '../../config/index.js';

describe('canonical JSON (RFC 8785)', () => {
  it('matches the RFC 8785 section 3.2.2 example', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
  });

  it('sorts keys by UTF-16 code units at every depth and hashes the UTF-8 bytes', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 0, y: 1 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"y":1,"z":0}]},"b":1}');
    expect(canonicalHash({ a: 1 })).toBe(createHash('sha256').update('{"a":1}').digest('hex'));
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});

describe('evidence Merkle tree', () => {
  // leaves sha256("a") .. sha256("e"); roots computed with hashlib: parent = sha256(left || right) over raw bytes, last node promoted
  const leaves = ['a', 'b', 'c', 'd', 'e'].map((x) => sha256Hex(x));
  it.each([
    [1, 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb'],
    [2, 'e5a01fee14e0ed5c48714f22180f25ad8365b53f9779f79dc4a3d7e93963f94a'],
    [3, '7075152d03a5cd92104887b476862778ec0c87be5c2fa1c0a90f87c49fad6eff'],
    [4, '14ede5e8e97ad9372327728f5099b95604a39593cac3bd38a343ad76205213e7'],
    [5, 'd71f8983ad4ee170f8129f1ebcdd7440be7798d8e1c80420bf11f1eced610dba'],
  ])('%i leaves -> known root', (n, root) => {
    expect(merkleRoot(leaves.slice(0, n))).toBe(root);
  });

  it('promotes the odd node instead of hashing it with itself', () => {
    const [a, b, c] = leaves;
    const pair = (l: string, r: string) => createHash('sha256').update(Buffer.from(l!, 'hex')).update(Buffer.from(r!, 'hex')).digest('hex');
    expect(merkleRoot([a!, b!, c!])).toBe(pair(pair(a!, b!), c!));
    expect(merkleRoot([a!, b!, c!])).not.toBe(pair(pair(a!, b!), pair(c!, c!)));
  });

  it('refuses no leaves and leaves that are not lower-case sha256 hex', () => {
    expect(() => merkleRoot([])).toThrow();
    expect(() => merkleRoot([leaves[0]!.toUpperCase()])).toThrow();
    expect(() => merkleRoot(['abc'])).toThrow();
  });
});

describe('score and grade', () => {
  it('weights passed rules only and grades A-F', () => {
    expect(scoreSummary([
      { weight: 3, result: 'passed' },
      { weight: 1, result: 'gap' },
      { weight: 1, result: 'conflict' },
    ])).toEqual({ total: 60, grade: 'C', verified_rules: 1, total_rules: 3, gaps: 1, conflicts: 1 });
    expect([100, 85, 84, 70, 69, 55, 54, 40, 39, 25, 24, 0].map(gradeFor).join('')).toBe('AABBCCDDEEFF');
  });
});

function outcome(id: ProbeId, over: Partial<ProbeOutcome> = {}): ProbeOutcome {
  return { url: `https://shop.example${PROBES[id].path}`, scheme: 'https', status: 404, contentType: 'text/plain', text: 'not found', failure: null, ...over };
}

const json = (value: unknown, contentType = 'application/json'): Partial<ProbeOutcome> => ({ status: 200, contentType, text: JSON.stringify(value) });

/** Every probe answering what a fully agent-ready domain serves. */
function readyOutcomes(): Record<ProbeId, ProbeOutcome> {
  const o = Object.fromEntries(PROBE_IDS.map((id) => [id, outcome(id)])) as Record<ProbeId, ProbeOutcome>;
  o.agent_card = outcome('agent_card', json({ name: 'Shop', description: 'Sells', url: 'https://shop.example/a2a', version: '1', capabilities: {}, skills: [{ id: 's', name: 'S', description: 'd' }] }));
  o.robots = outcome('robots', { status: 200, contentType: 'text/plain', text: 'User-agent: *\nAllow: /\n' });
  o.llms = outcome('llms', { status: 200, contentType: 'text/markdown', text: '# Shop\n> sells\n' });
  o.oauth_as = outcome('oauth_as', json({ issuer: 'https://shop.example', token_endpoint: 'https://shop.example/token', response_types_supported: ['code'] }));
  o.oauth_pr = outcome('oauth_pr', json({ resource: 'https://shop.example/api', authorization_servers: ['https://shop.example'] }));
  o.api_catalog = outcome('api_catalog', json({ linkset: [] }, 'application/linkset+json'));
  o.security_txt = outcome('security_txt', { status: 200, contentType: 'text/plain', text: 'Contact: mailto:sec@shop.example\nExpires: 2099-01-01T00:00:00Z\n' });
  o.signature_directory = outcome('signature_directory', json({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'AA' }] }, 'application/http-message-signatures-directory+json'));
  o.x402 = outcome('x402', json({ x402Version: 1 }));
  o.openapi = outcome('openapi', json({ openapi: '3.1.0', paths: {} }));
  o.mcp_server_card = outcome('mcp_server_card', json({ serverInfo: { name: 'shop', version: '1' } }));
  o.tls = outcome('tls', { status: 200, contentType: 'text/html', text: '<html></html>' });
  return o;
}

const evaluate = (outcomes: Record<ProbeId, ProbeOutcome>) =>
  Object.fromEntries(evaluateRules({ domain: 'shop.example', origin: 'https://shop.example', now: new Date('2026-11-23T00:00:00Z'), outcomes }).map(({ rule, outcome: r }) => [rule.id, r.result]));

describe('rule catalog', () => {
  it('has at least 20 rules AR-001... with unique ids, texts, positive weights and a probe each', () => {
    expect(TRUST_RULES.length).toBeGreaterThanOrEqual(20);
    TRUST_RULES.forEach((r, i) => {
      expect(r.id).toBe(`AR-${String(i + 1).padStart(3, '0')}`);
      expect(r.title.length && r.why.length && r.fix.length && r.passes_when.length).toBeGreaterThan(0);
      expect(r.weight).toBeGreaterThan(0);
      expect(PROBES[r.probe]).toBeDefined();
    });
    const fetched = new Set<string>(TRUST_RULES.map((r) => PROBES[r.probe].path));
    for (const path of ['/.well-known/agent-card.json', '/robots.txt', '/llms.txt', '/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource', '/.well-known/api-catalog', '/.well-known/security.txt', '/.well-known/http-message-signatures-directory', '/.well-known/x402.json', '/openapi.json', '/.well-known/mcp/server-card.json', '/']) {
      expect(fetched.has(path)).toBe(true);
    }
  });

  it('an empty domain has only gaps, a ready one passes every rule', () => {
    const empty = evaluate(Object.fromEntries(PROBE_IDS.map((id) => [id, outcome(id)])) as Record<ProbeId, ProbeOutcome>);
    // robots.txt absent does not shut agents out; TLS answered (404) over https
    expect(Object.entries(empty).filter(([, r]) => r !== 'gap').map(([id]) => id)).toEqual(['AR-007', 'AR-021']);
    expect(Object.values(evaluate(readyOutcomes())).every((r) => r === 'passed')).toBe(true);
  });

  it('detects conflicts: robots shutting agents out of a published card, foreign issuer and resource, http endpoint, expired security.txt', () => {
    const o = readyOutcomes();
    o.robots = outcome('robots', { status: 200, text: 'User-agent: *\nDisallow: /\n' });
    o.oauth_as = outcome('oauth_as', json({ issuer: 'https://other.example', token_endpoint: 'x', response_types_supported: [] }));
    o.oauth_pr = outcome('oauth_pr', json({ resource: 'https://other.example/', authorization_servers: ['x'] }));
    o.agent_card = outcome('agent_card', json({ name: 'S', description: 'd', url: 'http://shop.example/a2a', version: '1', capabilities: {}, skills: [] }));
    o.security_txt = outcome('security_txt', { status: 200, text: 'Contact: mailto:a@b\nExpires: 2020-01-01T00:00:00Z\n' });
    const r = evaluate(o);
    expect([r['AR-007'], r['AR-010'], r['AR-012'], r['AR-004'], r['AR-016']]).toEqual(['conflict', 'conflict', 'conflict', 'conflict', 'conflict']);
    expect(r['AR-003']).toBe('gap'); // no skills
  });

  it('media types, failures and malformed documents are gaps', () => {
    const o = readyOutcomes();
    o.api_catalog = outcome('api_catalog', json({ linkset: [] }));
    o.signature_directory = outcome('signature_directory', json({ keys: [] }));
    o.openapi = outcome('openapi', json({ swagger: '2.0', paths: {} }));
    o.tls = outcome('tls', { status: null, text: '', contentType: null, failure: 'network' });
    o.llms = outcome('llms', { status: 200, text: 'no heading' });
    const r = evaluate(o);
    expect([r['AR-013'], r['AR-014'], r['AR-017'], r['AR-018'], r['AR-020'], r['AR-021'], r['AR-008']]).toEqual(['passed', 'gap', 'gap', 'gap', 'gap', 'gap', 'gap']);
    o.tls = outcome('tls', { scheme: 'http', status: 200 });
    expect(evaluate(o)['AR-021']).toBe('gap');
    o.tls = outcome('tls', { status: null, text: '', contentType: null, failure: 'too_large' });
    expect(evaluate(o)['AR-021']).toBe('passed');
  });

  it('robots.txt: only a "Disallow: /" in the * group shuts everyone out', () => {
    expect(robotsBlocksEveryone('User-agent: *\nDisallow: /')).toBe(true);
    expect(robotsBlocksEveryone('User-agent: badbot\nDisallow: /\n\nUser-agent: *\nDisallow: /private')).toBe(false);
    expect(robotsBlocksEveryone('User-agent: *\nDisallow:')).toBe(false);
    expect(robotsBlocksEveryone('# x\nUser-agent: GPTBot\nUser-agent: *\nDisallow: / # all')).toBe(true);
  });
});

describe('evidence, profile and snapshot hash', () => {
  it('evidence is the body hash, or the hash of the canonical failure description', () => {
    expect(evidenceHash({ body: Buffer.from('hello') })).toBe(sha256Hex('hello'));
    expect(evidenceHash({ error: 'timeout', url: 'https://a.example/x' })).toBe(sha256Hex('{"error":"timeout","url":"https://a.example/x"}'));
  });

  it('profile hash covers the published catalog', () => {
    expect(PROFILE_DOCUMENT.rules).toBe(PUBLIC_RULES);
    expect(PROFILE_HASH).toBe(sha256Hex(canonicalJson({ profile_version: PROFILE_DOCUMENT.profile_version, rules: PUBLIC_RULES })));
    expect(PUBLIC_RULES[0]).toEqual({ id: 'AR-001', title: TRUST_RULES[0]!.title, why: TRUST_RULES[0]!.why, fix: TRUST_RULES[0]!.fix, weight: 10, fetches: { method: 'GET', path: '/.well-known/agent-card.json', accept: 'application/json' }, passes_when: TRUST_RULES[0]!.passes_when });
  });

  it('snapshot hash leaves out integrity and on_chain only', () => {
    const body = { domain: 'a.example', score_summary: { total: 1 } };
    const h = snapshotHash(body);
    expect(h).toBe(sha256Hex('{"domain":"a.example","score_summary":{"total":1}}'));
    expect(snapshotHash({ ...body, integrity: { x: 1 }, on_chain: { y: 2 } })).toBe(h);
    expect(snapshotHash({ ...body, _links: {} })).not.toBe(h);
  });
});

describe('snapshot signing key', () => {
  // RFC 8032 section 7.1 TEST 1 secret key, wrapped in PKCS#8
  const seed = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
  const pkcs8Hex = `302e020100300506032b657004220420${seed}`;

  it('loads a PKCS#8 key (hex or PEM), derives the RFC 8032 public key and signs the 32 hash bytes', () => {
    const signer = makeTrustSigner({ TRUST_SIGNING_KEY: pkcs8Hex, TRUST_SIGNING_KEY_ID: 'k1' });
    expect(signer.publicKeyHex).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    expect(signer.keyId).toBe('k1');
    expect(signer.ephemeral).toBe(false);
    const hash = sha256Hex('snapshot');
    const sig = signer.signHash(hash);
    expect(sig).toMatch(/^[0-9a-f]{128}$/);
    // independent check with node:crypto over the raw digest bytes
    expect(verify(null, Buffer.from(hash, 'hex'), signer.publicKey, Buffer.from(sig, 'hex'))).toBe(true);
    expect(verify(null, Buffer.from(hash), signer.publicKey, Buffer.from(sig, 'hex'))).toBe(false);
    expect(verifySnapshotSignature(hash, sig, signer.publicKeyHex)).toBe(true);
    expect(verifySnapshotSignature(sha256Hex('other'), sig, signer.publicKeyHex)).toBe(false);
    const pem = createPrivateKey({ key: Buffer.from(pkcs8Hex, 'hex'), format: 'der', type: 'pkcs8' }).export({ format: 'pem', type: 'pkcs8' }).toString();
    expect(makeTrustSigner({ TRUST_SIGNING_KEY: pem, TRUST_SIGNING_KEY_ID: 'k1' }).signHash(hash)).toBe(sig); // Ed25519 is deterministic
  });

  it('without a configured key generates one with a derived key id', () => {
    const a = makeTrustSigner({ TRUST_SIGNING_KEY: undefined, TRUST_SIGNING_KEY_ID: undefined });
    expect(a.ephemeral).toBe(true);
    expect(a.keyId).toBe(`trust-${createHash('sha256').update(Buffer.from(a.publicKeyHex, 'hex')).digest('hex').slice(0, 16)}`);
    expect(a.publicKey.asymmetricKeyType).toBe('ed25519');
  });

  it('config accepts only Ed25519 PKCS#8 keys and requires the key and its id in production for the API', () => {
    expect(isEd25519PrivateKey(pkcs8Hex)).toBe(true);
    expect(isEd25519PrivateKey(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString())).toBe(false);
    expect(isEd25519PrivateKey('zz')).toBe(false);
    expect(() => loadConfig({ TRUST_SIGNING_KEY: 'abcd' })).toThrow(/TRUST_SIGNING_KEY/);
    let message = '';
    try {
      loadConfig({ NODE_ENV: 'production' }, { role: 'api' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/TRUST_SIGNING_KEY: missing/);
    expect(message).toMatch(/TRUST_SIGNING_KEY_ID: missing/);
  });
});
