/**
 * `npm run demo`: act as an agent against the stack `npm run dev` started. Reads .data/localnet.json,
 * picks the first agent account without a passport, signs in (GET /auth/challenge), buys a bronze
 * passport over x402 paying localnet HBAR, upgrades it to silver, and resolves its DID.
 * The Temporal UI (http://localhost:8233) then shows the passport:local:{account} and
 * passport-upgrade:... workflows.
 */
import fs from 'node:fs';
import { parsePrivateKey, signBytes } from '../ledger/keys.js';
import { createPayingFetch } from '../ledger/x402/clientScheme.js';

const cfg = JSON.parse(fs.readFileSync(process.env.LOCALNET_CONFIG_PATH ?? '.data/localnet.json', 'utf8'));
const api: string = cfg.apiUrl ?? 'http://127.0.0.1:3000';

type Agent = { accountId: string; did: string; keyType: 'ED25519' | 'ECDSA'; privateKey: string };

async function signedHeaders(agent: Agent): Promise<Record<string, string>> {
  const res = await fetch(`${api}/auth/challenge?did=${encodeURIComponent(agent.did)}`);
  const { challenge } = (await res.json()) as { challenge: string };
  const key = parsePrivateKey(agent.privateKey, agent.keyType);
  return {
    'content-type': 'application/json',
    'x-service-did': agent.did,
    'x-service-challenge': challenge,
    'x-service-signature': Buffer.from(signBytes(key, challenge)).toString('hex'),
  };
}

async function paidPost(agent: Agent, path: string, body: unknown) {
  const pay = createPayingFetch({ accountId: agent.accountId, privateKey: agent.privateKey, keyType: agent.keyType, node: cfg.node, maxAmountTinybars: 600n * 100_000_000n, networks: ['local'] });
  const res = await pay(`${api}${path}`, { method: 'POST', headers: await signedHeaders(agent), body: JSON.stringify(body) });
  const json = await res.json();
  console.log(`POST ${path} -> ${res.status}${res.headers.get('payment-response') ? ' (paid)' : ''}`);
  return json as Record<string, any>;
}

let agent: Agent | undefined;
for (const a of cfg.accounts as Agent[]) {
  const owned = (await (await fetch(`${api}/passport/address/${a.accountId}`)).json()) as { passports?: unknown[] };
  if (!owned.passports?.length) {
    agent = a;
    break;
  }
}
if (!agent) {
  console.log('every agent account already holds a passport; delete .data/ for a fresh localnet');
  process.exit(0);
}
console.log(`agent ${agent.did} (${agent.keyType})`);
const issued = await paidPost(agent, '/passport/request', { tier: 'bronze', endpoint: 'https://agent.example/a2a' });
console.log(issued);
if (issued.tokenId) {
  console.log(await paidPost(agent, `/passport/${issued.tokenId}/${issued.serialNumber}/upgrade`, { tier: 'silver' }));
  const doc = await (await fetch(`${api}/did/${agent.did}`)).json();
  console.log(JSON.stringify(doc, null, 2));
}
