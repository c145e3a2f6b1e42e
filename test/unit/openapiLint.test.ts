// /openapi.json against the OpenAPI linter (issue 29 item 3): the app's document, built without
// services (scripts/client-generate.ts), linted by `redocly lint` (pinned devDependency @redocly/cli)
// with the recommended rules of redocly.yaml: no error. And what the linter cannot judge: every
// operation's security requirement matches how the route authenticates, and `servers` names the
// origin the document was fetched from.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../scripts/client-generate.js';

const root = path.join(import.meta.dirname, '..', '..');
type Json = Record<string, any>;

function lint(file: string): Promise<{ totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] }> {
  return new Promise((resolve, reject) => {
    execFile(
      path.join(root, 'node_modules', '.bin', 'redocly'),
      ['lint', file, '--config', path.join(root, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'],
      { cwd: root, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
      (_err, stdout) => {
        // exit code 1 on errors; the JSON report is on stdout either way
        try {
          resolve(JSON.parse(stdout.slice(stdout.indexOf('{'))));
        } catch (e) {
          reject(new Error(`redocly gave no JSON report: ${String(e)}\n${stdout.slice(0, 2000)}`));
        }
      },
    );
  });
}

describe('/openapi.json', () => {
  let doc: Json;

  it('passes `redocly lint` (recommended rules) with no error', async () => {
    doc = await buildOpenApiDocument();
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-')), 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const report = await lint(file);
    const errors = report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`);
    expect(errors).toEqual([]);
    expect(report.totals.errors).toBe(0);
  }, 180_000);

  it('every operation declares its security, as the route authenticates', async () => {
    doc ??= await buildOpenApiDocument();
    const ops = Object.entries<Json>(doc.paths).flatMap(([p, item]) => ['get', 'post', 'put', 'delete', 'patch'].filter((m) => item[m]).map((m) => [`${m.toUpperCase()} ${p}`, item[m]] as const));
    expect(ops.length).toBeGreaterThan(50);
    for (const [name, op] of ops) expect(op.security, name).toBeDefined();
    const security = (name: string) => ops.find(([n]) => n === name)![1].security;
    const signature = { serviceDid: [], serviceChallenge: [], serviceSignature: [] };
    expect(security('POST /market/tasks')).toEqual([signature]);
    expect(security('POST /agents/register')).toEqual([signature]);
    expect(security('GET /market/tasks')).toEqual([{}, { registryKey: [] }, { oauth: ['registry'] }]);
    expect(security('GET /market/tasks/{taskId}')).toContainEqual(signature);
    expect(security('GET /market/tasks/{taskId}')).toContainEqual({});
    expect(security('POST /passport/request')).toEqual([{ ...signature, x402Payment: [] }]);
    expect(security('POST /admin/revoke')).toEqual([{ adminToken: [] }]);
    expect(security('GET /api/v1/agents/me')).toEqual([{ registryKey: [] }, { oauth: ['registry'] }]);
    expect(security('POST /oauth/token')).toEqual([{ oauthClient: [] }, {}]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminToken', 'oauth', 'oauthClient', 'registryKey', 'serviceChallenge', 'serviceDid', 'serviceSignature', 'x402Payment']);
    // the answers any route can give are declared on every operation
    for (const [name, op] of ops) for (const status of ['400', '401', '429', '500', '503']) expect(op.responses[status], `${name} ${status}`).toBeDefined();
  }, 180_000);

  it('servers names the origin the document was fetched from (PUBLIC_BASE_URL when set)', async () => {
    doc ??= await buildOpenApiDocument();
    expect(doc.servers).toEqual([{ url: 'http://localhost:80' }]);
  }, 180_000);
});
