/**
 * The agent-readiness rule catalog of the trust snapshots (issue 11; DESIGN.md section 6 "Trust
 * snapshots"). /rules, /rules/{id} and /rules/{id}.json render it; GET /api/trust/{domain} runs it.
 *
 * A rule names one PROBE (a GET of one path on https://{domain}) whose outcome is its evidence,
 * and a pure `evaluate` over the outcomes of every probe (a rule may look at a second probe to
 * detect a contradiction, e.g. an agent card published while robots.txt forbids every agent):
 *   passed   the domain does what the rule asks;
 *   gap      it does not (missing, malformed, wrong media type): a fix is available;
 *   conflict the domain publishes signals that contradict each other or the rule.
 * Probes are fetched once each, whatever the number of rules reading them.
 *
 * Changing a rule (text, weight, probe or evaluation) changes the catalog: bump PROFILE_VERSION;
 * profile_hash (sha256 of the canonical JSON of the public catalog) changes with the text anyway.
 */

export const PROFILE_VERSION = '1.0.0';

export const PROBES = {
  agent_card: { path: '/.well-known/agent-card.json', accept: 'application/json' },
  robots: { path: '/robots.txt', accept: 'text/plain' },
  llms: { path: '/llms.txt', accept: 'text/markdown, text/plain' },
  oauth_as: { path: '/.well-known/oauth-authorization-server', accept: 'application/json' },
  oauth_pr: { path: '/.well-known/oauth-protected-resource', accept: 'application/json' },
  api_catalog: { path: '/.well-known/api-catalog', accept: 'application/linkset+json, application/json' },
  security_txt: { path: '/.well-known/security.txt', accept: 'text/plain' },
  signature_directory: { path: '/.well-known/http-message-signatures-directory', accept: 'application/http-message-signatures-directory+json, application/json' },
  x402: { path: '/.well-known/x402.json', accept: 'application/json' },
  openapi: { path: '/openapi.json', accept: 'application/json' },
  mcp_server_card: { path: '/.well-known/mcp/server-card.json', accept: 'application/json' },
  tls: { path: '/', accept: 'text/html, */*' },
} as const satisfies Record<string, { path: string; accept: string }>;

export type ProbeId = keyof typeof PROBES;
export const PROBE_IDS = Object.keys(PROBES) as ProbeId[];

/** What fetching one probe gave: an HTTP answer (status set) or a failure (failure set). */
export interface ProbeOutcome {
  url: string;
  /** https in production; http only under the test-only origin override */
  scheme: 'https' | 'http';
  /** HTTP status, or null when no answer arrived */
  status: number | null;
  /** media type, lower case, without parameters; null when absent or no answer */
  contentType: string | null;
  /** the body as UTF-8 text ('' when no answer) */
  text: string;
  /** failure reason (dns_failed, address_refused, timeout, too_large, network, ...) or null */
  failure: string | null;
}

export interface EvaluationInput {
  domain: string;
  /** the origin the probes were fetched from (https://{domain} in production) */
  origin: string;
  now: Date;
  outcomes: Record<ProbeId, ProbeOutcome>;
}

export type RuleResultKind = 'passed' | 'gap' | 'conflict';
export interface RuleResult {
  result: RuleResultKind;
  detail: string;
}

export interface TrustRule {
  id: string;
  title: string;
  why: string;
  fix: string;
  weight: number;
  probe: ProbeId;
  /** how the evaluation decides, in words (published) */
  passes_when: string;
  evaluate(input: EvaluationInput): RuleResult;
}

// --- helpers over outcomes (pure) ---------------------------------------------------------------

const pass = (detail: string): RuleResult => ({ result: 'passed', detail });
const gap = (detail: string): RuleResult => ({ result: 'gap', detail });
const conflict = (detail: string): RuleResult => ({ result: 'conflict', detail });

function is2xx(o: ProbeOutcome): boolean {
  return o.status !== null && o.status >= 200 && o.status < 300;
}

function missing(o: ProbeOutcome): string {
  if (o.status === null) return `no answer from ${o.url} (${o.failure ?? 'failed'})`;
  return `${o.url} answered ${o.status}`;
}

type Json = Record<string, unknown>;

/** The body parsed as a JSON object, or null (not 2xx, not JSON, or not an object). */
function jsonObject(o: ProbeOutcome): Json | null {
  if (!is2xx(o)) return null;
  try {
    const value: unknown = JSON.parse(o.text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
  } catch {
    return null;
  }
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const isJsonMedia = (t: string | null) => t === 'application/json' || (t !== null && /^application\/[a-z0-9.+-]+\+json$/.test(t));

function hostOf(url: unknown): string | null {
  if (!isString(url)) return null;
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return null;
  }
}

/** The host[:port] of the origin the probes used (the domain itself in production). */
const originHost = (input: EvaluationInput) => new URL(input.origin).host.toLowerCase();

/** Fields of the JSON object of a probe that are missing or of the wrong type. */
function missingFields(doc: Json, fields: Record<string, 'string' | 'array' | 'object'>): string[] {
  return Object.entries(fields)
    .filter(([name, type]) => {
      const v = doc[name];
      if (type === 'string') return !isString(v);
      if (type === 'array') return !Array.isArray(v);
      return v === null || typeof v !== 'object' || Array.isArray(v);
    })
    .map(([name]) => name);
}

/** Rule: the probe answers 2xx with a JSON object that has these fields. */
function jsonDocument(probe: ProbeId, what: string, fields: Record<string, 'string' | 'array' | 'object'>) {
  return (input: EvaluationInput): RuleResult => {
    const o = input.outcomes[probe];
    if (!is2xx(o)) return gap(`${what}: ${missing(o)}`);
    const doc = jsonObject(o);
    if (!doc) return gap(`${what}: the body is not a JSON object`);
    const absent = missingFields(doc, fields);
    return absent.length ? gap(`${what}: missing or malformed ${absent.join(', ')}`) : pass(`${what} found`);
  };
}

/** Rule: the probe answers 2xx with one of these media types. */
function mediaType(probe: ProbeId, what: string, accepted: (t: string | null) => boolean, expected: string) {
  return (input: EvaluationInput): RuleResult => {
    const o = input.outcomes[probe];
    if (!is2xx(o)) return gap(`${what}: ${missing(o)}`);
    return accepted(o.contentType) ? pass(`${what} served as ${o.contentType}`) : gap(`${what} served as ${o.contentType ?? 'no content type'}, expected ${expected}`);
  };
}

/** `Disallow: /` in the robots.txt group for `*` (the rules every agent without its own group follows). */
export function robotsBlocksEveryone(text: string): boolean {
  let inStar = false;
  let groupHasRules = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/#.*$/, '').trim();
    const m = /^([A-Za-z-]+)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    const field = m[1]!.toLowerCase();
    const value = m[2]!.trim();
    if (field === 'user-agent') {
      if (groupHasRules) {
        inStar = false;
        groupHasRules = false;
      }
      if (value === '*') inStar = true;
    } else if (field === 'allow' || field === 'disallow') {
      groupHasRules = true;
      if (inStar && field === 'disallow' && value === '/') return true;
    }
  }
  return false;
}

/** Fields of an RFC 9116 security.txt (name lower case -> values). */
export function securityTxtFields(text: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const raw of text.split(/\r?\n/)) {
    const m = /^([A-Za-z-]+):\s*(.+)$/.exec(raw.trim());
    if (!m || raw.trim().startsWith('#')) continue;
    const name = m[1]!.toLowerCase();
    fields.set(name, [...(fields.get(name) ?? []), m[2]!.trim()]);
  }
  return fields;
}

const agentCardFound = (input: EvaluationInput) => jsonObject(input.outcomes.agent_card) !== null;

// --- the catalog --------------------------------------------------------------------------------

export const TRUST_RULES: readonly TrustRule[] = [
  {
    id: 'AR-001',
    title: 'A2A agent card is published',
    why: 'Agents discover what your service does, and how to talk to it, from the A2A agent card at a well-known address; without it they have to be configured by hand.',
    fix: 'Serve your A2A agent card as JSON at https://{domain}/.well-known/agent-card.json.',
    weight: 10,
    probe: 'agent_card',
    passes_when: 'GET /.well-known/agent-card.json answers 2xx with a JSON object.',
    evaluate: (input) => (agentCardFound(input) ? pass('agent card found') : gap(`agent card: ${is2xx(input.outcomes.agent_card) ? 'the body is not a JSON object' : missing(input.outcomes.agent_card)}`)),
  },
  {
    id: 'AR-002',
    title: 'Agent card carries the required A2A fields',
    why: 'Clients need the name, description, endpoint URL, version, capabilities and skills to decide whether and how to call the agent.',
    fix: 'Add name, description, url, version (strings), capabilities (object) and skills (array) to the agent card.',
    weight: 5,
    probe: 'agent_card',
    passes_when: 'The agent card is a JSON object with string name, description, url and version, an object capabilities and an array skills.',
    evaluate: jsonDocument('agent_card', 'agent card', { name: 'string', description: 'string', url: 'string', version: 'string', capabilities: 'object', skills: 'array' }),
  },
  {
    id: 'AR-003',
    title: 'Agent card lists its skills',
    why: 'Skills are what a client agent matches a task against; an agent card without described skills is not selectable.',
    fix: 'List at least one skill in the agent card, each with an id, a name and a description.',
    weight: 4,
    probe: 'agent_card',
    passes_when: 'skills is a non-empty array whose items all have string id, name and description.',
    evaluate: (input) => {
      const card = jsonObject(input.outcomes.agent_card);
      if (!card) return gap('no agent card');
      const skills = card.skills;
      if (!Array.isArray(skills) || skills.length === 0) return gap('the agent card lists no skills');
      const bad = skills.filter((s) => !s || typeof s !== 'object' || missingFields(s as Json, { id: 'string', name: 'string', description: 'string' }).length > 0);
      return bad.length ? gap(`${bad.length} of ${skills.length} skills lack an id, name or description`) : pass(`${skills.length} skills described`);
    },
  },
  {
    id: 'AR-004',
    title: 'Agent card points to an HTTPS endpoint',
    why: 'An agent endpoint over plain HTTP exposes every message and credential to the network; a card advertising one contradicts a secure deployment.',
    fix: 'Set the agent card url to the https:// address of your A2A endpoint.',
    weight: 2,
    probe: 'agent_card',
    passes_when: 'The agent card url is an https URL; an http URL is a conflict.',
    evaluate: (input) => {
      const card = jsonObject(input.outcomes.agent_card);
      if (!card) return gap('no agent card');
      if (!isString(card.url)) return gap('the agent card has no url');
      if (card.url.startsWith('https://')) return pass('endpoint is https');
      if (card.url.startsWith('http://')) return conflict('the agent card advertises a plain-http endpoint');
      return gap('the agent card url is not an http(s) URL');
    },
  },
  {
    id: 'AR-005',
    title: 'Agent card is served as JSON',
    why: 'Clients and caches decide how to parse a document from its media type; a card served as text/html is often skipped.',
    fix: 'Serve /.well-known/agent-card.json with Content-Type: application/json.',
    weight: 2,
    probe: 'agent_card',
    passes_when: 'The agent card answers 2xx with media type application/json (or any application/*+json).',
    evaluate: mediaType('agent_card', 'agent card', isJsonMedia, 'application/json'),
  },
  {
    id: 'AR-006',
    title: 'robots.txt is published',
    why: 'Crawlers and agents look at robots.txt first to learn what they may fetch; its absence leaves them guessing.',
    fix: 'Serve a robots.txt (text/plain) at the root of the domain.',
    weight: 3,
    probe: 'robots',
    passes_when: 'GET /robots.txt answers 2xx with media type text/plain.',
    evaluate: mediaType('robots', 'robots.txt', (t) => t === 'text/plain', 'text/plain'),
  },
  {
    id: 'AR-007',
    title: 'robots.txt does not shut every agent out',
    why: 'A blanket "Disallow: /" for every user agent forbids agents to read your discovery documents, even those you publish for them.',
    fix: 'Remove "Disallow: /" from the "User-agent: *" group, or allow the /.well-known/ paths explicitly.',
    weight: 4,
    probe: 'robots',
    passes_when: 'robots.txt is absent or its "User-agent: *" group has no "Disallow: /"; with such a rule it is a conflict when an agent card is published, a gap otherwise.',
    evaluate: (input) => {
      const o = input.outcomes.robots;
      if (!is2xx(o) || !robotsBlocksEveryone(o.text)) return pass('agents are not shut out');
      return agentCardFound(input) ? conflict('robots.txt disallows everything for every agent while an agent card is published') : gap('robots.txt disallows everything for every agent');
    },
  },
  {
    id: 'AR-008',
    title: 'llms.txt is published',
    why: 'llms.txt gives language-model agents a short, curated map of your documentation instead of making them crawl HTML.',
    fix: 'Serve a markdown /llms.txt whose first line is a "# " heading naming the site, followed by links to key pages.',
    weight: 5,
    probe: 'llms',
    passes_when: 'GET /llms.txt answers 2xx and its first non-empty line starts with "# ".',
    evaluate: (input) => {
      const o = input.outcomes.llms;
      if (!is2xx(o)) return gap(`llms.txt: ${missing(o)}`);
      const first = o.text.split(/\r?\n/).find((l) => l.trim().length > 0) ?? '';
      return first.startsWith('# ') ? pass('llms.txt found') : gap('llms.txt does not start with a "# " heading');
    },
  },
  {
    id: 'AR-009',
    title: 'OAuth authorization-server metadata is published (RFC 8414)',
    why: 'Agents obtain tokens without human help only if they can discover the token endpoint and supported grants.',
    fix: 'Serve RFC 8414 metadata at /.well-known/oauth-authorization-server with issuer, token_endpoint and response_types_supported.',
    weight: 6,
    probe: 'oauth_as',
    passes_when: 'The document is a JSON object with string issuer and token_endpoint and an array response_types_supported.',
    evaluate: jsonDocument('oauth_as', 'authorization-server metadata', { issuer: 'string', token_endpoint: 'string', response_types_supported: 'array' }),
  },
  {
    id: 'AR-010',
    title: 'Authorization-server issuer is this domain',
    why: 'RFC 8414 requires the issuer to be the URL the metadata was fetched from; a different issuer is what a mix-up attack looks like.',
    fix: 'Set issuer to https://{domain} (no path), exactly.',
    weight: 3,
    probe: 'oauth_as',
    passes_when: "issuer's host is the domain (conflict when it names another host).",
    evaluate: (input) => {
      const doc = jsonObject(input.outcomes.oauth_as);
      if (!doc || !isString(doc.issuer)) return gap('no authorization-server metadata with an issuer');
      const host = hostOf(doc.issuer);
      return host === originHost(input) ? pass('issuer matches the domain') : conflict(`issuer ${JSON.stringify(doc.issuer.slice(0, 100))} is not this domain`);
    },
  },
  {
    id: 'AR-011',
    title: 'OAuth protected-resource metadata is published (RFC 9728)',
    why: 'A client that receives a 401 learns from this document which authorization servers protect the API.',
    fix: 'Serve RFC 9728 metadata at /.well-known/oauth-protected-resource with resource and authorization_servers.',
    weight: 5,
    probe: 'oauth_pr',
    passes_when: 'The document is a JSON object with a string resource and a non-empty array authorization_servers.',
    evaluate: (input) => {
      const r = jsonDocument('oauth_pr', 'protected-resource metadata', { resource: 'string', authorization_servers: 'array' })(input);
      if (r.result !== 'passed') return r;
      const doc = jsonObject(input.outcomes.oauth_pr)!;
      return (doc.authorization_servers as unknown[]).length > 0 ? r : gap('authorization_servers is empty');
    },
  },
  {
    id: 'AR-012',
    title: 'Protected-resource identifier is this domain',
    why: 'RFC 9728 binds the metadata to the resource it describes; a resource naming another host cannot be trusted for this one.',
    fix: 'Set resource to an https URL on {domain}.',
    weight: 2,
    probe: 'oauth_pr',
    passes_when: "resource's host is the domain (conflict when it names another host).",
    evaluate: (input) => {
      const doc = jsonObject(input.outcomes.oauth_pr);
      if (!doc || !isString(doc.resource)) return gap('no protected-resource metadata with a resource');
      return hostOf(doc.resource) === originHost(input) ? pass('resource matches the domain') : conflict('resource names another host');
    },
  },
  {
    id: 'AR-013',
    title: 'API catalog is published (RFC 9727)',
    why: 'The API catalog lists your APIs and their descriptions in one linkset, so agents find every API from the domain alone.',
    fix: 'Serve a linkset document { "linkset": [ ... ] } at /.well-known/api-catalog.',
    weight: 5,
    probe: 'api_catalog',
    passes_when: 'The document is a JSON object with an array linkset.',
    evaluate: jsonDocument('api_catalog', 'API catalog', { linkset: 'array' }),
  },
  {
    id: 'AR-014',
    title: 'API catalog uses the linkset media type',
    why: 'RFC 9727 requires application/linkset+json so clients recognise the document for what it is.',
    fix: 'Serve /.well-known/api-catalog with Content-Type: application/linkset+json.',
    weight: 2,
    probe: 'api_catalog',
    passes_when: 'The API catalog answers 2xx with media type application/linkset+json.',
    evaluate: mediaType('api_catalog', 'API catalog', (t) => t === 'application/linkset+json', 'application/linkset+json'),
  },
  {
    id: 'AR-015',
    title: 'security.txt is published (RFC 9116)',
    why: 'Whoever finds a vulnerability in your agent or API needs to know whom to tell.',
    fix: 'Serve /.well-known/security.txt with at least one Contact: and one Expires: field.',
    weight: 4,
    probe: 'security_txt',
    passes_when: 'GET /.well-known/security.txt answers 2xx with Contact and Expires fields.',
    evaluate: (input) => {
      const o = input.outcomes.security_txt;
      if (!is2xx(o)) return gap(`security.txt: ${missing(o)}`);
      const f = securityTxtFields(o.text);
      const absent = ['contact', 'expires'].filter((n) => !f.has(n));
      return absent.length ? gap(`security.txt lacks ${absent.join(' and ')}`) : pass('security.txt found');
    },
  },
  {
    id: 'AR-016',
    title: 'security.txt has not expired',
    why: 'An expired security.txt says its contacts may no longer be valid; RFC 9116 asks readers to treat it as stale.',
    fix: 'Set Expires to a date less than a year ahead and renew it before it passes.',
    weight: 2,
    probe: 'security_txt',
    passes_when: 'Expires is a date in the future (conflict when it has passed).',
    evaluate: (input) => {
      const o = input.outcomes.security_txt;
      const expires = is2xx(o) ? securityTxtFields(o.text).get('expires')?.[0] : undefined;
      if (!expires) return gap('no security.txt with Expires');
      const at = Date.parse(expires);
      if (Number.isNaN(at)) return gap('Expires is not a date');
      return at > input.now.getTime() ? pass(`valid until ${new Date(at).toISOString()}`) : conflict(`expired on ${new Date(at).toISOString()}`);
    },
  },
  {
    id: 'AR-017',
    title: 'HTTP message signatures directory is published',
    why: 'Agents that sign their requests (Web Bot Auth) publish their keys here so that servers can verify who is calling.',
    fix: 'Serve a JWKS { "keys": [ ... ] } at /.well-known/http-message-signatures-directory.',
    weight: 5,
    probe: 'signature_directory',
    passes_when: 'The document is a JSON object whose keys array is non-empty and every key has a kty.',
    evaluate: (input) => {
      const doc = jsonObject(input.outcomes.signature_directory);
      if (!doc) return gap(`signature directory: ${is2xx(input.outcomes.signature_directory) ? 'not a JSON object' : missing(input.outcomes.signature_directory)}`);
      const keys = doc.keys;
      if (!Array.isArray(keys) || keys.length === 0) return gap('the signature directory has no keys');
      return keys.every((k) => k && typeof k === 'object' && isString((k as Json).kty)) ? pass(`${keys.length} keys published`) : gap('a key has no kty');
    },
  },
  {
    id: 'AR-018',
    title: 'Signature directory uses its media type',
    why: 'The HTTP message signatures directory draft registers application/http-message-signatures-directory+json for this document.',
    fix: 'Serve the directory with Content-Type: application/http-message-signatures-directory+json.',
    weight: 2,
    probe: 'signature_directory',
    passes_when: 'The directory answers 2xx with media type application/http-message-signatures-directory+json.',
    evaluate: mediaType('signature_directory', 'signature directory', (t) => t === 'application/http-message-signatures-directory+json', 'application/http-message-signatures-directory+json'),
  },
  {
    id: 'AR-019',
    title: 'x402 payment discovery is published',
    why: 'Agents pay for API calls over x402 only if they can learn the accepted networks, assets and facilitator before the first 402.',
    fix: 'Serve your x402 payment information as a JSON object at /.well-known/x402.json.',
    weight: 4,
    probe: 'x402',
    passes_when: 'GET /.well-known/x402.json answers 2xx with a JSON object.',
    evaluate: jsonDocument('x402', 'x402 discovery', {}),
  },
  {
    id: 'AR-020',
    title: 'OpenAPI description is published',
    why: 'A machine-readable API description lets agents build correct calls without reading prose documentation.',
    fix: 'Serve an OpenAPI 3 document at /openapi.json.',
    weight: 6,
    probe: 'openapi',
    passes_when: 'GET /openapi.json answers 2xx with a JSON object whose openapi is a "3.x" version string and whose paths is an object.',
    evaluate: (input) => {
      const r = jsonDocument('openapi', 'OpenAPI document', { openapi: 'string', paths: 'object' })(input);
      if (r.result !== 'passed') return r;
      const version = jsonObject(input.outcomes.openapi)!.openapi as string;
      return version.startsWith('3.') ? r : gap(`openapi ${JSON.stringify(version.slice(0, 20))} is not version 3`);
    },
  },
  {
    id: 'AR-021',
    title: 'Served over HTTPS with a valid certificate',
    why: 'Agents exchange credentials and payments with your service; without TLS anyone on the path can read or change them.',
    fix: 'Serve https://{domain}/ with a certificate valid for the domain (for example from a free ACME CA).',
    weight: 8,
    probe: 'tls',
    passes_when: 'GET https://{domain}/ completes a TLS handshake whose certificate verifies for the domain and gets any HTTP answer (a body over the size cap included).',
    evaluate: (input) => {
      const o = input.outcomes.tls;
      if (o.scheme !== 'https') return gap('not fetched over https');
      if (o.status !== null) return pass(`https answered ${o.status}`);
      // a body over the size cap was being received: the TLS handshake had succeeded
      return o.failure === 'too_large' ? pass('https answered (body over the size cap)') : gap(`https failed: ${o.failure ?? 'no answer'}`);
    },
  },
  {
    id: 'AR-022',
    title: 'MCP server card is published',
    why: 'MCP clients discover a server, its transport and its capabilities from the server card before connecting.',
    fix: 'Serve an MCP server card (serverInfo with name and version, transport, capabilities) at /.well-known/mcp/server-card.json.',
    weight: 4,
    probe: 'mcp_server_card',
    passes_when: 'The document is a JSON object naming the server (serverInfo.name, or name).',
    evaluate: (input) => {
      const doc = jsonObject(input.outcomes.mcp_server_card);
      if (!doc) return gap(`MCP server card: ${is2xx(input.outcomes.mcp_server_card) ? 'not a JSON object' : missing(input.outcomes.mcp_server_card)}`);
      const info = doc.serverInfo as Json | undefined;
      return isString(info?.name) || isString(doc.name) ? pass('MCP server card found') : gap('the MCP server card names no server');
    },
  },
];

const BY_ID = new Map(TRUST_RULES.map((r) => [r.id, r]));

export function findRule(id: string): TrustRule | undefined {
  return BY_ID.get(id);
}

/** A rule as published (/rules/{id}.json, the profile hash): everything but the evaluation code. */
export interface PublicRule {
  id: string;
  title: string;
  why: string;
  fix: string;
  weight: number;
  fetches: { method: 'GET'; path: string; accept: string };
  passes_when: string;
}

export function publicRule(rule: TrustRule): PublicRule {
  const probe = PROBES[rule.probe];
  return { id: rule.id, title: rule.title, why: rule.why, fix: rule.fix, weight: rule.weight, fetches: { method: 'GET', path: probe.path, accept: probe.accept }, passes_when: rule.passes_when };
}

export const PUBLIC_RULES: readonly PublicRule[] = TRUST_RULES.map(publicRule);

/** Runs every rule over the probe outcomes, in catalog order. */
export function evaluateRules(input: EvaluationInput): { rule: TrustRule; outcome: RuleResult }[] {
  return TRUST_RULES.map((rule) => ({ rule, outcome: rule.evaluate(input) }));
}
