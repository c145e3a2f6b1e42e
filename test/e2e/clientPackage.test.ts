// The packed client (npm run client:pack) works outside the repository: unpacked into a project of
// its own whose node_modules holds only the dependencies its package.json declares (linked from this
// repository's node_modules, as `npm install` of the tarball would provide them without the network),
// the library and the MCP entry import, its declarations type-check a consumer (and reject a wrong
// one), and its CLI buys a passport from the real stack and resolves the DID.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClientPackage, type ClientPackage } from '../../scripts/lib/clientPackage.js';
import { startPassportStack, type PassportStack } from './passportHarness.js';

const root = path.join(import.meta.dirname, '..', '..');

function run(cmd: string, args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: opts.cwd, env: { PATH: process.env.PATH ?? '', ...opts.env }, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the packed client outside the repository', () => {
  let tmp: string;
  let app: string;
  let pkg: ClientPackage;
  let ps: PassportStack;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'client-package-test-'));
    pkg = await buildClientPackage(path.join(tmp, 'out'));
    app = path.join(tmp, 'app');
    const installed = path.join(app, 'node_modules', '@agent-passport', 'client');
    fs.mkdirSync(installed, { recursive: true });
    execFileSync('tar', ['-xzf', pkg.tarball, '-C', installed, '--strip-components=1']);
    for (const dep of Object.keys(pkg.manifest.dependencies)) {
      const link = path.join(app, 'node_modules', dep);
      fs.mkdirSync(path.dirname(link), { recursive: true });
      fs.symlinkSync(path.join(root, 'node_modules', dep), link, 'dir');
    }
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    ps = await startPassportStack('clientpkg');
    await ps.startWorker();
  });
  afterAll(async () => {
    await ps?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('declares what it imports and ships no path into the repository', () => {
    expect(pkg.manifest).toMatchObject({ name: '@agent-passport/client', type: 'module' });
    expect(Object.keys(pkg.manifest.dependencies)).toEqual(expect.arrayContaining(['@hashgraph/sdk', '@modelcontextprotocol/sdk', 'commander', 'openapi-fetch', 'zod']));
    expect(pkg.manifest).not.toHaveProperty('private');
    const dist = path.join(app, 'node_modules', '@agent-passport', 'client', 'dist');
    for (const f of fs.readdirSync(dist).filter((n) => n.endsWith('.js'))) expect(fs.readFileSync(path.join(dist, f), 'utf8'), f).not.toMatch(/from ["']\.\.\//);
  });

  it('carries @agent-passport/core inside: no dependency on it, no import of it, its declarations shipped', () => {
    expect(pkg.manifest.dependencies).not.toHaveProperty('@agent-passport/core');
    const installed = path.join(app, 'node_modules', '@agent-passport', 'client');
    const files = (fs.readdirSync(path.join(installed, 'dist'), { recursive: true }) as string[]).filter((n) => /\.(js|d\.ts)$/.test(n));
    expect(files.filter((n) => n.endsWith('.d.ts')).map((n) => path.basename(n))).toEqual(expect.arrayContaining(['index.d.ts', 'keys.d.ts', 'clientScheme.d.ts']));
    for (const f of files) expect(fs.readFileSync(path.join(installed, 'dist', f), 'utf8'), f).not.toMatch(/(?:from\s*|import\s*\(\s*|require\s*\(\s*)["']@agent-passport\/core/);
    expect(fs.existsSync(path.join(app, 'node_modules', '@agent-passport', 'core'))).toBe(false);
  });

  it('imports as a library and as MCP tools', async () => {
    const r = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const c = await import('@agent-passport/client'); const m = await import('@agent-passport/client/mcp'); console.log(JSON.stringify({ client: typeof c.AgentPassportClient, sign: typeof c.signInHeaders, mcp: typeof m.createAgentMcpServer, tools: m.READ_ONLY_TOOLS.length }))",
      ],
      { cwd: app },
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ client: 'function', sign: 'function', mcp: 'function' });
    expect(out.tools).toBeGreaterThan(0);
  });

  it('type-checks a consumer with its declarations, and rejects a wrong one', async () => {
    fs.writeFileSync(
      path.join(app, 'good.ts'),
      "import { AgentPassportClient, createApiClient, type Tier } from '@agent-passport/client';\n" +
        "const tier: Tier = 'gold';\n" +
        "const client = new AgentPassportClient({ baseUrl: 'http://127.0.0.1:3000' });\n" +
        'export const p = client.buyPassport(tier);\n' +
        "export const d = createApiClient('http://127.0.0.1:3000').GET('/did/{did}', { params: { path: { did: 'did:hedera:local:0.0.1' } } });\n",
    );
    fs.writeFileSync(path.join(app, 'bad.ts'), "import type { Tier } from '@agent-passport/client';\nexport const tier: Tier = 'diamond';\n");
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const common = ['--noEmit', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--skipLibCheck', '--types', 'node', '--typeRoots', path.join(root, 'node_modules', '@types')];
    const good = await run(process.execPath, [tsc, ...common, 'good.ts'], { cwd: app });
    expect(good.code, good.stdout).toBe(0);
    const bad = await run(process.execPath, [tsc, ...common, 'bad.ts'], { cwd: app });
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toContain('"diamond"');
  });

  it("type-checks core's types through the client's declarations (the key type), and rejects a wrong one", async () => {
    fs.writeFileSync(
      path.join(app, 'goodKey.ts'),
      "import { AgentPassportClient, type AgentIdentity } from '@agent-passport/client';\n" +
        "const agent: AgentIdentity = { accountId: '0.0.1001', privateKey: '0x00', keyType: 'ECDSA' };\n" +
        "export const client = new AgentPassportClient({ baseUrl: 'http://127.0.0.1:3000', agent });\n",
    );
    fs.writeFileSync(path.join(app, 'badKey.ts'), "import type { AgentIdentity } from '@agent-passport/client';\nexport const agent: AgentIdentity = { accountId: '0.0.1001', privateKey: '0x00', keyType: 'RSA' };\n");
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const common = ['--noEmit', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--skipLibCheck', '--types', 'node', '--typeRoots', path.join(root, 'node_modules', '@types')];
    const good = await run(process.execPath, [tsc, ...common, 'goodKey.ts'], { cwd: app });
    expect(good.code, good.stdout).toBe(0);
    const bad = await run(process.execPath, [tsc, ...common, 'badKey.ts'], { cwd: app });
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toContain('"RSA"');
  });

  it('its CLI buys a passport from the real stack and resolves the DID', async () => {
    const agent = ps.agents[0]!;
    const bin = path.join(app, 'node_modules', '@agent-passport', 'client', 'bin', 'agent-passport.mjs');
    const env = { AGENT_PRIVATE_KEY: agent.privateKey, AGENT_ACCOUNT_ID: agent.accountId, AGENT_KEY_TYPE: agent.keyType };
    const base = [bin, '--url', ps.baseUrl, '--deployment', ps.stack.env.LOCALNET_CONFIG_PATH!];
    const before = (await ps.stack.ledger.mirror.getHbarBalance(agent.accountId))!;
    const bought = await run(process.execPath, [...base, 'passport', 'buy', '--tier', 'bronze', '--json'], { cwd: app, env });
    expect(bought.code, bought.stderr).toBe(0);
    expect(JSON.parse(bought.stdout)).toMatchObject({ tier: 'bronze', tokenId: ps.stack.deployment.passportTokenId });
    expect((await ps.stack.ledger.mirror.getHbarBalance(agent.accountId))!).toBeLessThan(before);
    const doc = await run(process.execPath, [...base, 'did', 'resolve', agent.did], { cwd: app });
    expect(doc.code, doc.stderr).toBe(0);
    expect(doc.stdout).toContain(agent.accountId);
    expect(bought.stdout + bought.stderr + doc.stdout + doc.stderr).not.toContain(agent.privateKey);
  });
});
