// docker-compose.yml cannot run on these machines (no Docker), so its consistency with the code is
// checked here: the file parses as compose parses it (YAML 1.2, merge keys, no duplicate keys), and each
// API and worker service, given only the variables the file's header says to set, passes the
// production start-up check of its role (config/index.ts loadConfig with PRODUCTION_REQUIRED and the
// TRUST_PROXY rule); the APIs believe X-Forwarded-For of the load balancer's address alone; the escrow
// key reaches no API.
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { loadConfig, PRODUCTION_REQUIRED, type ConfigRole } from '../../config/index.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const text = fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');

type Mount = string | { type?: string; source: string; target: string; read_only?: boolean };
type Service = { environment?: Record<string, string | number | boolean>; networks?: Record<string, { ipv4_address?: string }>; volumes?: Mount[] };

/** compose's interpolation of the forms the file uses: ${X}, ${X:-default}, ${X:?message}, $$ */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}/g, (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (whole === '$$') return '$';
    const v = env[name!];
    if (op === ':-') return v ? v : arg!;
    if (op === ':?' && !v) throw new Error(`compose refuses: ${name} ${arg}`);
    return v ?? '';
  });
}

const ed25519Hex = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('hex');

/** plausible values, in each variable's format, of what an operator sets */
const OPERATOR_VALUES: Record<string, string> = {
  POSTGRES_PASSWORD: 'pw',
  PAYLOAD_CODEC_KEY: 'a'.repeat(64),
  ADMIN_TOKEN_SHA256: 'b'.repeat(64),
  HEDERA_OPERATOR_ID: '0.0.1001',
  HEDERA_OPERATOR_KEY: '302e020100300506032b657004220420' + 'c'.repeat(64),
  ESCROW_PRIVATE_KEY: '302e020100300506032b657004220420' + 'd'.repeat(64),
  FACILITATOR_URL: 'https://facilitator.example',
  TRUST_SIGNING_KEY: ed25519Hex(),
  TRUST_SIGNING_KEY_ID: 'trust-1',
  OAUTH_SIGNING_KEY: ed25519Hex(),
  OAUTH_SIGNING_KEY_ID: 'oauth-1',
};

/** the variables of the header's `... docker compose up --build` command */
function documentedVariables(): string[] {
  const header = text.slice(0, text.indexOf('docker compose up'));
  const usage = header.slice(header.lastIndexOf('#\n'));
  return [...usage.matchAll(/([A-Z][A-Z0-9_]+)=\.\.\./g)].map((m) => m[1]!);
}

describe('docker-compose.yml', () => {
  const doc = parseDocument(text, { merge: true, uniqueKeys: true });

  it('parses as compose parses it (no duplicate keys)', () => {
    expect(doc.errors.map((e) => e.message)).toEqual([]);
  });

  const services = (doc.toJS({ maxAliasCount: -1 }) as { services: Record<string, Service> }).services;
  const byRole: Record<ConfigRole, string[]> = { api: ['api-1', 'api-2'], worker: ['worker-1', 'worker-2'] };

  for (const role of ['api', 'worker'] as const) {
    it(`its ${role} services start in production with only the documented variables set`, () => {
      const operator = Object.fromEntries(documentedVariables().map((name) => [name, OPERATOR_VALUES[name] ?? `no test value for ${name}`]));
      for (const name of byRole[role]) {
        const raw = services[name]?.environment;
        expect(raw, `${name} has an environment`).toBeDefined();
        const env = Object.fromEntries(Object.entries(raw!).map(([k, v]) => [k, interpolate(String(v), operator)]));
        expect(env.NODE_ENV).toBe('production');
        for (const required of PRODUCTION_REQUIRED[role]) expect(Object.keys(env), `${name} passes ${required}`).toContain(required);
        expect(() => loadConfig(env, { role }), name).not.toThrow();
      }
    });
  }

  it("the APIs believe the X-Forwarded-For of the load balancer's fixed address alone", () => {
    const lbAddress = services.lb?.networks?.default?.ipv4_address;
    expect(lbAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    for (const name of byRole.api) {
      const env = Object.fromEntries(Object.entries(services[name]!.environment!).map(([k, v]) => [k, interpolate(String(v), { POSTGRES_PASSWORD: 'pw' })]));
      expect(loadConfig(env).TRUST_PROXY, name).toEqual([lbAddress]);
    }
  });

  it('gives the escrow key and the operator key to the workers only (issue 26 item 9)', () => {
    for (const key of ['ESCROW_PRIVATE_KEY', 'HEDERA_OPERATOR_KEY']) {
      for (const [name, s] of Object.entries(services)) {
        const has = Object.keys(s.environment ?? {}).includes(key);
        expect(has, `${name} ${key}`).toBe(name.startsWith('worker-'));
      }
    }
  });

  it('mounts no part of .data into the APIs (the escrow key file lives there); the deployment file alone, read-only', () => {
    for (const name of byRole.api) {
      const volumes = services[name]!.volumes ?? [];
      expect(volumes.length, name).toBeGreaterThan(0);
      for (const v of volumes) {
        const mount = typeof v === 'string' ? { source: v.split(':')[0]!, target: v.split(':')[1]!, read_only: v.endsWith(':ro') } : v;
        // a bind of one file, read-only: never the directory (.data, ./.data, /app/.data, ...)
        expect(mount.source.replace(/\/+$/, ''), name).not.toMatch(/(^|\/)\.data$/);
        expect(mount.source, name).toMatch(/\.json\}?$/);
        expect(mount.read_only, name).toBe(true);
        expect(mount.target, name).toBe(services[name]!.environment!.LOCALNET_CONFIG_PATH);
      }
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const lines = dockerfile.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const finalStage = lines.slice(lines.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true));

  it('runs the image as a non-root user (issue 26 item 9)', () => {
    const users = finalStage.filter((l) => /^USER\s/i.test(l)).map((l) => l.split(/\s+/)[1]!);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
    // the USER comes after every step that writes to the image
    const last = finalStage.map((l) => /^USER\s/i.test(l)).lastIndexOf(true);
    expect(finalStage.slice(last).filter((l) => /^(RUN|COPY|ADD)\s/i.test(l))).toEqual([]);
  });
});
