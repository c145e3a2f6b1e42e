// The MCP server with the SDK's own Client: over streamable HTTP at /mcp on the API (read-only tools,
// no key anywhere) and over stdio (the agent-passport-mcp bin as a child process, the agent key in
// its environment): tools listed with schemas, a search and reads over HTTP, and over stdio a passport
// bought (paid in HBAR), a message sent and a task run to completion with the claimer paid.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AgentPassportClient } from '@agent-passport/client';
import { READ_ONLY_TOOLS, SIGNING_TOOLS } from '@agent-passport/client/mcp';
import { startPassportStack, upgradePassportTo, type PassportStack } from './passportHarness.js';
import type { TestAgent } from '../support/signing.js';

type Json = Record<string, any>;
const root = path.join(import.meta.dirname, '..', '..');

/** The JSON a tool answered (first text content); fails on isError. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Json> {
  const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { type: string; text: string }[] };
  expect(r.isError ?? false, `${name}: ${r.content[0]?.text}`).toBe(false);
  return JSON.parse(r.content[0].text);
}

describe('MCP server (SDK Client over streamable HTTP and stdio)', () => {
  let ps: PassportStack;
  let alice: TestAgent; // the stdio server's agent (ED25519)
  let bob: TestAgent; // ECDSA, through the plain client
  let b: AgentPassportClient;
  let http: Client;
  let stdio: Client;
  const texts: string[] = [];

  beforeAll(async () => {
    ps = await startPassportStack('mcp');
    await ps.startWorker();
    alice = ps.agents.find((x) => x.keyType === 'ED25519')!;
    bob = ps.agents.find((x) => x.keyType === 'ECDSA')!;
    b = new AgentPassportClient({ baseUrl: ps.baseUrl, agent: bob, nodeAccountId: ps.stack.localnet.config.node.accountId, a2aTopicId: ps.stack.deployment.topics.a2a });
    await b.buyPassport('gold'); // the marketplace is for gold and platinum passports (SPEC 2 trust ladder)
    await b.register({ name: 'mcp-bob', capabilities: ['api_call'], endpoint: 'https://bob.example/a2a', skills: ['summaries'] });

    http = new Client({ name: 'mcp-test-http', version: '1.0.0' });
    await http.connect(new StreamableHTTPClientTransport(new URL(`${ps.baseUrl}/mcp`)));
    stdio = new Client({ name: 'mcp-test-stdio', version: '1.0.0' });
    await stdio.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [path.join(root, 'packages', 'client', 'bin', 'agent-passport-mcp.mjs')],
        cwd: root,
        stderr: 'pipe',
        env: {
          PATH: process.env.PATH ?? '',
          AGENT_PASSPORT_URL: ps.baseUrl,
          AGENT_ACCOUNT_ID: alice.accountId,
          AGENT_PRIVATE_KEY: alice.privateKey,
          AGENT_KEY_TYPE: alice.keyType,
          A2A_TOPIC_ID: ps.stack.deployment.topics.a2a,
          NODE_ACCOUNT_ID: ps.stack.localnet.config.node.accountId,
          LOCALNET_CONFIG_PATH: path.join(root, 'no-such-deployment.json'),
        },
      }),
    );
  });
  afterAll(async () => {
    await http?.close().catch(() => undefined);
    await stdio?.close().catch(() => undefined);
    await ps?.stop();
  });

  describe('over streamable HTTP at /mcp', () => {
    it('lists exactly the read-only tools, each with a description and an object input schema', async () => {
      const { tools } = await http.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...READ_ONLY_TOOLS].sort());
      for (const t of tools) {
        expect(t.description?.length, t.name).toBeGreaterThan(10);
        expect(t.inputSchema.type).toBe('object');
        expect(t.annotations?.readOnlyHint, t.name).toBe(true);
      }
      for (const name of SIGNING_TOOLS) expect(tools.map((t) => t.name)).not.toContain(name);
    });

    it('runs a search and reads (agent, DID, passports, catalog)', async () => {
      const found = await call(http, 'search', { q: 'mcp-bob' });
      expect(JSON.stringify(found)).toContain(bob.did);
      expect(await call(http, 'get_agent', { did: bob.did })).toMatchObject({ did: bob.did, name: 'mcp-bob' });
      expect(JSON.stringify(await call(http, 'resolve_did', { did: bob.did }))).toContain(bob.accountId);
      const owned = await call(http, 'passports_of_account', { accountId: bob.accountId });
      expect((owned.passports as Json[]).some((p) => p.active)).toBe(true);
      expect(((await call(http, 'list_agents', {})).agents as Json[]).map((a) => a.did)).toContain(bob.did);
      expect((await call(http, 'catalog')) as unknown as Json[]).toHaveLength(4);
    });

    it('an API error comes back as a tool error with the SPEC body; bad arguments are refused by the schema', async () => {
      const r = (await http.callTool({ name: 'get_task', arguments: { taskId: 'no-such-task' } })) as { isError?: boolean; content: { text: string }[] };
      expect(r.isError).toBe(true);
      expect(JSON.parse(r.content[0].text)).toMatchObject({ status: 404, code: expect.any(String) });
      const bad = (await http.callTool({ name: 'passports_of_account', arguments: { accountId: 'not an account' } })) as { isError?: boolean };
      expect(bad.isError).toBe(true);
    });

    it('GET /mcp answers 405 (stateless server)', async () => {
      const r = await fetch(`${ps.baseUrl}/mcp`);
      expect(r.status).toBe(405);
      expect(((await r.json()) as Json).code).toBe('invalid_request');
    });
  });

  describe('over stdio (agent-passport-mcp with the key in its environment)', () => {
    it('lists the read-only and the signing tools; no tool takes a key argument', async () => {
      const { tools } = await stdio.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...READ_ONLY_TOOLS, ...SIGNING_TOOLS].sort());
      for (const t of tools) expect(Object.keys(t.inputSchema.properties ?? {}).join(','), t.name).not.toMatch(/key/i);
      expect(await call(stdio, 'whoami')).toEqual({ did: alice.did });
    });

    it('without AGENT_PRIVATE_KEY the stdio server offers only the read-only tools', async () => {
      const ro = new Client({ name: 'mcp-test-stdio-ro', version: '1.0.0' });
      await ro.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [path.join(root, 'packages', 'client', 'bin', 'agent-passport-mcp.mjs')],
          cwd: root,
          stderr: 'pipe',
          env: { PATH: process.env.PATH ?? '', AGENT_PASSPORT_URL: ps.baseUrl, LOCALNET_CONFIG_PATH: path.join(root, 'no-such-deployment.json') },
        }),
      );
      try {
        const { tools } = await ro.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual([...READ_ONLY_TOOLS].sort());
        expect(await call(ro, 'get_agent', { did: bob.did })).toMatchObject({ name: 'mcp-bob' });
      } finally {
        await ro.close();
      }
    });

    it('buys a passport (paid), sends a message, runs a task to completion (the claimer is paid)', async () => {
      const before = (await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!;
      const passport = await call(stdio, 'buy_passport', { tier: 'bronze' });
      expect(passport).toMatchObject({ tier: 'bronze', tokenId: ps.stack.deployment.passportTokenId });
      expect((await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!).toBeLessThan(before);

      const sent = await call(stdio, 'send_message', { to: bob.did, body: 'hi bob, from an MCP tool' });
      expect(sent).toMatchObject({ from: alice.did, to: bob.did });
      expect(((await b.inbox()).messages as Json[]).map((m) => m.body)).toContain('hi bob, from an MCP tool');

      await upgradePassportTo(ps, alice, 'gold'); // set-up: posting needs a gold or platinum passport
      const task = await call(stdio, 'post_task', { title: 'summarise via mcp', priceHbar: 2 });
      expect(task.status).toBe('posted');
      await b.claimTask(task.taskId);
      await b.deliverTask(task.taskId, { resultBody: 'summary' });
      const bobBefore = (await ps.stack.ledger.mirror.getHbarBalance(bob.accountId))!;
      const done = await call(stdio, 'complete_task', { taskId: task.taskId });
      expect(done.status).toBe('completed');
      expect((await ps.stack.ledger.mirror.getHbarBalance(bob.accountId))!).toBeGreaterThan(bobBefore);
      expect(await call(http, 'get_task', { taskId: task.taskId })).toMatchObject({ status: 'completed' });
      texts.push(JSON.stringify([passport, sent, task, done]));
      expect(texts.join('')).not.toContain(alice.privateKey);
    });
  });
});
