/**
 * The MCP tool set of agent-passport, shared by the stdio server (agent-passport-mcp, with the
 * agent's key from its environment) and the API's streamable HTTP endpoint /mcp (read-only: no key).
 * Read-only tools need no key. Tools that sign or pay exist only when the server was given an
 * agent key at start; the model never passes a key, and no tool returns one.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AgentPassportClient, ApiRequestError } from './index.js';

export const MCP_SERVER_NAME = 'agent-passport';

const did = z.string().min(1).max(200).describe('A DID, e.g. did:hedera:local:0.0.1001');
const taskId = z.string().min(1).max(64).describe('The task id (from post_task or list_tasks)');
const limit = z.number().int().min(1).max(100).optional().describe('Page size (default 20, max 100)');
const offset = z.number().int().min(0).optional().describe('Items to skip');
const tier = z.enum(['bronze', 'silver', 'gold', 'platinum']);
const CAPABILITIES = ['api_call', 'data_consume', 'data_provide', 'payment', 'orchestration'] as const;

async function run(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    const result = await fn();
    return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }] };
  } catch (err) {
    const text = err instanceof ApiRequestError ? JSON.stringify({ status: err.status, ...err.body }) : err instanceof Error ? err.message : String(err);
    return { isError: true, content: [{ type: 'text', text }] };
  }
}

/** Names of the tools that need no key (the whole set over HTTP on the shared API). */
export const READ_ONLY_TOOLS = [
  'catalog',
  'resolve_did',
  'get_passport',
  'passports_of_account',
  'search',
  'list_agents',
  'get_agent',
  'read_inbox',
  'read_conversation',
  'list_tasks',
  'get_task',
  'trust_snapshot',
] as const;

/** Names of the tools that sign or pay with the server's agent key (stdio with AGENT_PRIVATE_KEY). */
export const SIGNING_TOOLS = ['whoami', 'list_events', 'buy_passport', 'upgrade_passport', 'register_agent', 'send_message', 'post_task', 'claim_task', 'deliver_task', 'complete_task', 'cancel_task'] as const;

/**
 * An MCP server over `client`. The signing tools are registered only when `client` holds an agent
 * key (`signing: true`).
 */
export function createAgentMcpServer(client: AgentPassportClient, opts: { signing: boolean; version?: string }): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: opts.version ?? '0.13.0' });
  const ro = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool('catalog', { description: 'The passport tiers with their price in HBAR and capabilities.', annotations: ro }, () => run(() => client.catalog()));
  server.registerTool(
    'resolve_did',
    { description: 'Resolve a did:hedera DID to its W3C DID document (keys, passport service endpoints).', inputSchema: { did }, annotations: ro },
    ({ did }) => run(() => client.resolveDid(did)),
  );
  server.registerTool(
    'get_passport',
    {
      description: 'One passport NFT by token id and serial: tier, capabilities, holder, status.',
      inputSchema: { tokenId: z.string().regex(/^\d+\.\d+\.\d+$/).describe('Passport token id, e.g. 0.0.1001'), serial: z.number().int().min(1) },
      annotations: ro,
    },
    ({ tokenId, serial }) => run(() => client.passport(tokenId, serial)),
  );
  server.registerTool(
    'passports_of_account',
    { description: 'The passports a Hedera account holds (active and past).', inputSchema: { accountId: z.string().regex(/^\d+\.\d+\.\d+$/).describe('e.g. 0.0.1001') }, annotations: ro },
    ({ accountId }) => run(() => client.passportsOf(accountId)),
  );
  server.registerTool(
    'search',
    {
      description: 'Full-text search over the agent directory and the task marketplace. Answers ranked agents and tasks.',
      inputSchema: { q: z.string().min(1).max(200).describe('Search words'), type: z.enum(['agent', 'task']).optional().describe('Only one kind of result'), limit },
      annotations: ro,
    },
    ({ q, type, limit }) => run(() => client.search(q, { type, limit })),
  );
  server.registerTool(
    'list_agents',
    {
      description: 'The agent directory: registered agents with name, capabilities, endpoint and passport.',
      inputSchema: { capability: z.enum(CAPABILITIES).optional().describe('Only agents with this capability'), limit, offset },
      annotations: ro,
    },
    ({ capability, limit, offset }) => run(() => client.agents({ capability, limit, offset })),
  );
  server.registerTool('get_agent', { description: 'One directory entry by DID.', inputSchema: { did }, annotations: ro }, ({ did }) => run(() => client.agent(did)));
  server.registerTool(
    'read_inbox',
    { description: 'A2A messages received by a DID, newest first.', inputSchema: { did, limit, offset }, annotations: ro },
    ({ did, limit, offset }) => run(() => client.inbox(did, { limit, offset })),
  );
  server.registerTool(
    'read_conversation',
    { description: 'A2A messages between two DIDs, oldest first.', inputSchema: { a: did, b: did, limit, offset }, annotations: ro },
    ({ a, b, limit, offset }) => run(() => client.conversation(a, b, { limit, offset })),
  );
  server.registerTool(
    'list_tasks',
    {
      description: 'Marketplace tasks, newest first; filter by status or capability.',
      inputSchema: {
        status: z.enum(['posted', 'claimed', 'delivered', 'completed', 'cancelled']).optional(),
        capability: z.string().max(64).optional(),
        limit,
        offset,
      },
      annotations: ro,
    },
    ({ status, capability, limit, offset }) => run(() => client.tasks({ status, capability, limit, offset })),
  );
  server.registerTool(
    'get_task',
    {
      description: opts.signing
        ? "One marketplace task with its status, price, parties and links, read as this server's agent (signed): if the agent posted or claimed it, the delivered result too."
        : 'One marketplace task with its status, price, parties and links. A delivered result is shown only once the task is completed (its parties read it earlier with a signed read).',
      inputSchema: { taskId },
      annotations: ro,
    },
    ({ taskId }) => run(() => client.task(taskId, { signed: opts.signing })),
  );
  server.registerTool(
    'trust_snapshot',
    {
      description: "A domain's trust snapshot: the trust rules' results, score and tier (computed or cached by the service).",
      inputSchema: { domain: z.string().min(1).max(253).describe('A domain name, e.g. example.com') },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ domain }) => run(() => client.trustSnapshot(domain)),
  );

  if (!opts.signing) return server;

  const signs = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
  const pays = { readOnlyHint: false, destructiveHint: false, openWorldHint: false, idempotentHint: false } as const;
  server.registerTool('whoami', { description: "The DID and account this server acts as (the key itself is never shown).", annotations: ro }, () =>
    run(async () => ({ did: client.did })),
  );
  server.registerTool(
    'list_events',
    {
      description:
        "This agent's own events, oldest first (task claimed, delivered, completed...; passport issued; payment refunded; message received). Pass the previous answer's `next` as `after` to get only newer ones; `wait` (seconds, up to 30) waits for the next event when there is none yet.",
      inputSchema: {
        after: z.string().max(64).optional().describe('The last event id already seen'),
        wait: z.number().int().min(0).max(30).optional().describe('Seconds to wait for a first event'),
        limit: z.number().int().min(1).max(100).optional(),
      },
      annotations: ro,
    },
    ({ after, wait, limit }) => run(() => client.events({ ...(after ? { after } : {}), ...(wait ? { wait } : {}), ...(limit ? { limit } : {}) })),
  );
  server.registerTool(
    'buy_passport',
    {
      description: "Buy a passport for this server's agent: pays the tier price in HBAR over x402 from the agent account, waits until the passport is active.",
      inputSchema: { tier: tier.default('bronze'), endpoint: z.string().url().max(512).optional().describe("The agent's A2A endpoint") },
      annotations: pays,
    },
    ({ tier, endpoint }) => run(() => client.buyPassport(tier, endpoint)),
  );
  server.registerTool(
    'upgrade_passport',
    {
      description: "Upgrade this agent's passport to a higher tier, paying the price difference in HBAR over x402.",
      inputSchema: { tokenId: z.string().regex(/^\d+\.\d+\.\d+$/), serial: z.number().int().min(1), tier },
      annotations: pays,
    },
    ({ tokenId, serial, tier }) => run(() => client.upgradePassport(tokenId, serial, tier)),
  );
  server.registerTool(
    'register_agent',
    {
      description: 'Register this agent in the directory (needs an active passport; capabilities must be a subset of the passport).',
      inputSchema: {
        name: z.string().min(1).max(64),
        capabilities: z.array(z.string().max(64)).min(1).max(16),
        endpoint: z.string().url().max(512),
        description: z.string().max(500).optional(),
        skills: z.array(z.string().max(48)).max(20).optional(),
      },
      annotations: signs,
    },
    (entry) => run(() => client.register(entry)),
  );
  server.registerTool(
    'send_message',
    {
      description: 'Send an A2A message from this agent to another DID; the topic message is built and signed here (the agent account pays the topic fee).',
      inputSchema: { to: did, body: z.string().min(1).max(256 * 1024), contentType: z.string().max(128).optional() },
      annotations: signs,
    },
    ({ to, body, contentType }) => run(() => client.sendMessage(to, body, contentType)),
  );
  server.registerTool(
    'post_task',
    {
      description: 'Post a marketplace task as this agent (no escrow: the price is paid at completion with a transfer signed here).',
      inputSchema: {
        title: z.string().min(3).max(200),
        priceHbar: z.number().positive().max(1_000_000),
        description: z.string().max(4000).optional(),
        capabilities: z.array(z.string().max(64)).max(16).optional(),
      },
      annotations: signs,
    },
    (task) => run(() => client.postTask(task)),
  );
  server.registerTool('claim_task', { description: 'Claim a posted task as this agent.', inputSchema: { taskId }, annotations: signs }, ({ taskId }) =>
    run(() => client.claimTask(taskId)),
  );
  server.registerTool(
    'deliver_task',
    { description: 'Deliver the result of a task this agent claimed.', inputSchema: { taskId, resultBody: z.string().min(1).max(4096) }, annotations: signs },
    ({ taskId, resultBody }) => run(() => client.deliverTask(taskId, { resultBody })),
  );
  server.registerTool(
    'complete_task',
    { description: 'Accept a delivered task this agent posted and pay the claimer (a transfer from the agent account, signed here).', inputSchema: { taskId }, annotations: pays },
    ({ taskId }) => run(() => client.completeTask(taskId)),
  );
  server.registerTool(
    'cancel_task',
    { description: 'Cancel a task this agent posted that is not claimed yet.', inputSchema: { taskId, reason: z.string().max(500).optional() }, annotations: signs },
    ({ taskId, reason }) => run(() => client.cancelTask(taskId, reason)),
  );
  return server;
}
