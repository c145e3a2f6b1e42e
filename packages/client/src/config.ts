/**
 * Where the CLI and the stdio MCP server find the API, the agent key and the ledger ids:
 * flags first, then the environment, then the deployment file (.data/localnet.json by default).
 * The key is read from a file or AGENT_PRIVATE_KEY and only kept in memory; it is never printed.
 */
import fs from 'node:fs';
import type { AgentClientOptions, AgentIdentity } from './index.js';

export interface ConfigInput {
  url?: string;
  keyFile?: string;
  account?: string;
  keyType?: string;
  deployment?: string;
  /** the most seconds one request waits out a busy service (429/503 saying when to retry) */
  maxWait?: string;
}

type Env = Record<string, string | undefined>;

function readDeployment(path: string | undefined, required: boolean): Record<string, any> | undefined {
  if (!path) return undefined;
  if (!fs.existsSync(path)) {
    if (required) throw new Error(`deployment file ${path} not found`);
    return undefined;
  }
  return JSON.parse(fs.readFileSync(path, 'utf8'));
}

function keyType(text: string | undefined): 'ED25519' | 'ECDSA' | undefined {
  if (!text) return undefined;
  const t = text.toUpperCase();
  if (t !== 'ED25519' && t !== 'ECDSA') throw new Error('key type must be ED25519 or ECDSA');
  return t;
}

/**
 * The agent: --key-file (the key text, or JSON { accountId, privateKey, keyType?, did? } like an
 * account of .data/localnet.json) or AGENT_PRIVATE_KEY; the account from --account, the file or
 * AGENT_ACCOUNT_ID. Undefined when no key is given (read-only use).
 */
export function agentFrom(input: ConfigInput, env: Env): AgentIdentity | undefined {
  let privateKey: string | undefined;
  let fromFile: Record<string, any> = {};
  if (input.keyFile) {
    const text = fs.readFileSync(input.keyFile, 'utf8').trim();
    if (text.startsWith('{')) {
      fromFile = JSON.parse(text);
      privateKey = fromFile.privateKey;
    } else privateKey = text;
  } else privateKey = env.AGENT_PRIVATE_KEY?.trim() || undefined;
  if (!privateKey) return undefined;
  const accountId = input.account ?? fromFile.accountId ?? env.AGENT_ACCOUNT_ID;
  if (!accountId) throw new Error('the agent account is missing: --account, AGENT_ACCOUNT_ID or accountId in the key file');
  return { accountId, privateKey, keyType: keyType(input.keyType ?? fromFile.keyType ?? env.AGENT_KEY_TYPE), did: fromFile.did ?? env.AGENT_DID };
}

/** --max-wait / AGENT_PASSPORT_MAX_WAIT_S (seconds) in ms; undefined: the client's default. */
function maxWaitMs(seconds: string | undefined): number | undefined {
  if (seconds === undefined || seconds === '') return undefined;
  const n = Number(seconds);
  if (!Number.isFinite(n) || n < 0) throw new Error('the wait bound (--max-wait, AGENT_PASSPORT_MAX_WAIT_S) must be a number of seconds >= 0');
  return n * 1000;
}

/** Client options from flags, environment and the deployment file. */
export function clientOptionsFrom(input: ConfigInput, env: Env = process.env): AgentClientOptions {
  const deploymentPath = input.deployment ?? env.LOCALNET_CONFIG_PATH ?? '.data/localnet.json';
  const dep = readDeployment(deploymentPath, Boolean(input.deployment));
  return {
    baseUrl: input.url ?? env.AGENT_PASSPORT_URL ?? dep?.apiUrl ?? 'http://127.0.0.1:3000',
    agent: agentFrom(input, env),
    network: (env.HEDERA_NETWORK as AgentClientOptions['network']) ?? dep?.network ?? 'local',
    nodeAccountId: env.NODE_ACCOUNT_ID ?? dep?.node?.accountId ?? '0.0.3',
    a2aTopicId: env.A2A_TOPIC_ID ?? dep?.topics?.a2a,
    maxPaymentHbar: env.AGENT_MAX_PAYMENT_HBAR ? Number(env.AGENT_MAX_PAYMENT_HBAR) : undefined,
    maxWaitMs: maxWaitMs(input.maxWait ?? env.AGENT_PASSPORT_MAX_WAIT_S),
  };
}
