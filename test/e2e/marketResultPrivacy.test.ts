// A delivered result is the parties' until the task is completed (issue 26 item 3; DESIGN 12 "Money
// integrity II"): over HTTP on a real stack (localnet escrow, taskLifecycle on the Temporal dev server,
// the NOTIFY-fed task book), anonymous and third-party reads of a delivered task (one task, the lists,
// the MCP tools over /mcp, the feed, search, the marketplace topic) carry resultSha256 and the status
// but neither resultBody nor resultIpfs; the poster's and the claimer's DID-signed reads (HTTP, the
// typed client, the MCP get_task of a server holding their key) carry the result; once the task is
// completed (paid) anyone reads it, and a task cancelled after delivery keeps it with the parties.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { AgentPassportClient } from '@agent-passport/client';
import { createAgentMcpServer } from '@agent-passport/client/mcp';
import { parseTaskMessage, type TaskMessage } from '../../domain/market.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { buyPassport, getJson, postJson, startPassportStack, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
const SECRET = 'the summary nobody has paid for yet';
const IPFS = 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi';

describe('delivered results are read by the parties only until completion', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let other: TestAgent; // a third agent with a passport
  let http: Client; // the API's MCP endpoint (no key: read-only tools)

  const signed = async (path: string, signer: TestAgent, body: unknown) => postJson(ps, path, body, await signedHeaders(ps.app, signer));
  const signedGet = async (path: string, reader: TestAgent) => {
    const res = await fetch(`${ps.baseUrl}${path}`, { headers: await signedHeaders(ps.app, reader) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };
  const text = async (path: string) => (await fetch(`${ps.baseUrl}${path}`)).text();
  const waitTask = async (taskId: string, pred: (t: Json) => boolean, what: string): Promise<Json> => {
    const end = Date.now() + 60_000;
    for (;;) {
      const r = await getJson(ps, `/market/tasks/${taskId}`);
      if (r.status === 200 && pred(r.body)) return r.body;
      if (Date.now() > end) throw new Error(`task ${taskId}: ${what} not reached: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  };
  const tool = async (client: Client, name: string, args: Record<string, unknown>): Promise<string> => {
    const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[] };
    expect(r.isError ?? false, `${name}: ${r.content[0]?.text}`).toBe(false);
    return r.content[0].text;
  };
  const messagesOf = async (taskId: string): Promise<TaskMessage[]> => {
    const raw = await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.marketplace);
    return raw.map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8'))).filter((m): m is TaskMessage => m !== null && m.taskId === taskId);
  };
  /** a funded escrow task, claimed and delivered with `result` */
  const deliveredTask = async (result: { resultBody?: string; resultIpfs?: string }) => {
    const posted = await postJson(ps, '/market/tasks/signed', { posterDid: poster.did, title: 'Summarise a paper', priceHbar: 2, posterPrivateKey: poster.privateKey });
    expect(posted.status, JSON.stringify(posted.body)).toBe(200);
    const taskId = String(posted.body.taskId);
    expect((await signed(`/market/tasks/${taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    const d = await signed(`/market/tasks/${taskId}/deliver`, claimer, { claimerDid: claimer.did, ...result });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    // the claimer's own step answer carries what it delivered
    expect(d.body).toMatchObject({ status: 'delivered', ...result });
    await waitTask(taskId, (t) => t.status === 'delivered', 'delivered');
    return taskId;
  };

  beforeAll(async () => {
    ps = await startPassportStack('resultprivacy');
    await ps.startWorker();
    [poster, claimer, other] = ps.agents;
    for (const a of [poster, claimer, other]) {
      const r = await buyPassport(ps, a, { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    ps.app.market.settings.workflowWaitMs = 60_000;
    http = new Client({ name: 'result-privacy', version: '1.0.0' });
    await http.connect(new StreamableHTTPClientTransport(new URL(`${ps.baseUrl}/mcp`)));
  }, 240_000);
  afterAll(async () => {
    await http?.close().catch(() => undefined);
    await ps?.stop();
  });

  it('before completion: no result for anonymous or third-party reads (one task, lists, MCP, feed, search); the poster and the claimer read it signed; after completion anyone does', async () => {
    const taskId = await deliveredTask({ resultBody: SECRET });
    const sha = createHash('sha256').update(SECRET).digest('hex');

    // anonymous: one task, from memory
    const anon = await getJson(ps, `/market/tasks/${taskId}`);
    expect(anon.status).toBe(200);
    expect(anon.body).toMatchObject({ taskId, status: 'delivered', resultSha256: sha });
    expect(anon.body).not.toHaveProperty('resultBody');
    expect(anon.body).not.toHaveProperty('resultIpfs');
    // the lists: open statuses from memory, no filter and the poster filter from PostgreSQL
    for (const q of ['?status=delivered', '', `?posterDid=${encodeURIComponent(poster.did)}`, `?claimerDid=${encodeURIComponent(claimer.did)}`]) {
      const body = await text(`/market/tasks${q}`);
      expect(body, q).toContain(taskId);
      expect(body, q).not.toContain(SECRET);
    }
    // MCP over HTTP (no key)
    expect(await tool(http, 'get_task', { taskId })).not.toContain(SECRET);
    expect(await tool(http, 'list_tasks', { status: 'delivered' })).not.toContain(SECRET);
    // the feed and search
    expect(await text('/feed')).not.toContain(SECRET);
    expect(await text('/api/search?q=Summarise')).not.toContain(SECRET);
    expect(await text(`/api/search?q=${encodeURIComponent('nobody has paid')}`)).not.toContain(SECRET);

    // a third agent's signed read: the task, not the result
    const third = await signedGet(`/market/tasks/${taskId}`, other);
    expect(third.status).toBe(200);
    expect(third.body).not.toHaveProperty('resultBody');
    expect(JSON.stringify(third.body)).not.toContain(SECRET);

    // the parties' signed reads carry it, never kept by a shared cache
    for (const party of [poster, claimer]) {
      const r = await signedGet(`/market/tasks/${taskId}`, party);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ taskId, status: 'delivered', resultBody: SECRET, resultSha256: sha });
      expect(r.headers.get('cache-control')).toMatch(/private/);
    }
    // signature headers that do not verify: 401, not a silent anonymous answer
    const h = await signedHeaders(ps.app, poster);
    const forged = await getJson(ps, `/market/tasks/${taskId}`, { ...h, 'x-service-signature': (await signedHeaders(ps.app, other))['x-service-signature'] });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('auth_signature_invalid');

    // the typed client signs when it holds the key; the MCP get_task of a server with the poster's key too
    const posterClient = new AgentPassportClient({ baseUrl: ps.baseUrl, agent: poster });
    expect(await posterClient.task(taskId)).toMatchObject({ resultBody: SECRET });
    expect(await posterClient.task(taskId, { signed: false })).not.toHaveProperty('resultBody');
    expect(await new AgentPassportClient({ baseUrl: ps.baseUrl }).task(taskId)).not.toHaveProperty('resultBody');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createAgentMcpServer(posterClient, { signing: true });
    await server.connect(serverSide);
    const asPoster = new Client({ name: 'result-privacy-poster', version: '1.0.0' });
    await asPoster.connect(clientSide);
    try {
      expect(JSON.parse(await tool(asPoster, 'get_task', { taskId }))).toMatchObject({ resultBody: SECRET });
    } finally {
      await asPoster.close();
      await server.close();
    }

    // completed (paid): the result is public (SPEC 5: task reads are open)
    const done = await signed(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', escrowStatus: 'released', resultBody: SECRET });
    const paid = await waitTask(taskId, (t) => t.status === 'completed', 'completed');
    expect(paid.resultBody).toBe(SECRET);
    expect(await tool(http, 'get_task', { taskId })).toContain(SECRET);
  });

  it('a result given as resultIpfs stays off the public topic; cancelled after delivery, it stays with the parties', async () => {
    const taskId = await deliveredTask({ resultIpfs: IPFS });
    expect((await getJson(ps, `/market/tasks/${taskId}`)).body).not.toHaveProperty('resultIpfs');
    const delivered = (await messagesOf(taskId)).find((m) => m.type === 'task.delivered');
    expect(delivered, 'the task.delivered topic message').toBeTruthy();
    expect(JSON.stringify(delivered)).not.toContain(IPFS);

    const c = await signed(`/market/tasks/${taskId}/cancel`, poster, { posterDid: poster.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded', resultIpfs: IPFS });
    await waitTask(taskId, (t) => t.status === 'cancelled', 'cancelled');
    expect((await getJson(ps, `/market/tasks/${taskId}`)).body).not.toHaveProperty('resultIpfs');
    expect(await text(`/market/tasks?status=cancelled`)).not.toContain(IPFS);
    expect((await signedGet(`/market/tasks/${taskId}`, claimer)).body).toMatchObject({ resultIpfs: IPFS });
    expect((await signedGet(`/market/tasks/${taskId}`, other)).body).not.toHaveProperty('resultIpfs');
  });
});
