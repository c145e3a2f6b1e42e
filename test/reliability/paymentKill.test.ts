// No payment is ever stranded (issue 23): the API process is SIGKILLed at each point of a paid passport
// request (API_TEST_KILL_POINT, honoured only with NODE_ENV=test: after the facilitator verified the
// payment, after the payment and the claim were recorded, after the workflow started, after the
// workflow settled and issued but before the answer), and the client never retries. Within the bound
// (the payment reconciler runs every second here and settles payments 5 s old; production: 10 minutes)
// every payment ends as a passport (charged exactly the price) or with nothing taken (refunded, or
// never moved and no longer able to), to the tinybar on the ledger. Before issue 23 the API settled
// before it recorded the claim and started the workflow, and a kill there left the money taken with
// neither a passport nor a refund, for good.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import { paymentTransactionOf } from '../../ledger/x402/verifyPayment.js';
import { normalizeTransactionId } from '../../ledger/x402/ids.js';
import { freePort } from '../../scripts/lib/ports.js';
import { payingClient, startPassportStack, type PassportStack } from '../e2e/passportHarness.js';
import { eventually } from '../support/eventually.js';
import { signChallenge, type TestAgent } from '../support/signing.js';
import { databaseUrlOf, startChildProcess } from './childWorker.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HBAR = 100_000_000n;
const PRICE = 5n * HBAR; // bronze
/** the client's payment is valid this long: a payment never settled can no longer move after it */
const VALID_S = 30;
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const POINTS = ['after-verify', 'after-record', 'after-start', 'after-settle'] as const;

describe('a SIGKILLed API never strands a payment (a client that never retries)', () => {
  let ps: PassportStack;

  beforeAll(async () => {
    ps = await startPassportStack('paykill');
    await ps.startWorker();
    await ps.startReconciler({ afterMs: 5_000, everyMs: 1_000 });
  });
  afterAll(async () => {
    await ps?.stop();
  });

  /** an API process on its own port, dying at `point` */
  const startApi = async (point: (typeof POINTS)[number]) => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const api = await startChildProcess({
      name: 'api',
      entry: path.join(root, 'api', 'server.ts'),
      env: {
        ...ps.stack.env,
        DATABASE_URL: databaseUrlOf(ps.sql),
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: 'default',
        TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
        WORKFLOW_ID_SCOPE: ps.state.workflowIdScope!,
        HOST: '127.0.0.1',
        PORT: String(port),
        RATE_LIMIT_MAX: '100000',
        LOG_LEVEL: 'error',
        API_TEST_KILL_POINT: point,
      },
      ready: async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200,
    });
    return { api, url };
  };

  /** one paid request as an x402 client makes it; resolves with what it got (it never retries) */
  const buyOnce = async (url: string, agent: TestAgent) => {
    const challenge = (await (await fetch(`${url}/auth/challenge?did=${encodeURIComponent(agent.did)}`)).json()) as { challenge: string };
    const headers = { 'x-service-did': agent.did, 'x-service-challenge': challenge.challenge, 'x-service-signature': signChallenge(agent, challenge.challenge) };
    const client = payingClient(ps, agent, { maxHbar: 10n, validDurationSeconds: VALID_S });
    const answer = await client.fetch(`${url}/passport/request`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ tier: 'bronze' }) })
      .then((res) => `${res.status}`)
      .catch((err: Error) => `no answer (${(err.cause as Error | undefined)?.message ?? err.message})`);
    return { answer, signature: client.paymentSignature() };
  };

  it.each(POINTS.map((p, i) => [p, i] as const))('killed %s: the payment ends as a passport or with nothing taken, to the tinybar', { timeout: 240_000 }, async (point, i) => {
    const agent = ps.agents[i];
    const mirror = ps.stack.ledger.mirror;
    const before = (await mirror.getHbarBalance(agent.accountId))!;
    const { api, url } = await startApi(point);
    let answer: string;
    let signature: string | null;
    try {
      ({ answer, signature } = await buyOnce(url, agent));
      expect(await api.exited, `${point}: ${answer}\n${api.output()}`).toBeNull(); // killed by the signal
    } finally {
      await api.kill('SIGKILL');
    }
    expect(answer, point).toMatch(/^no answer/);
    expect(signature, `${point}: the client paid`).toBeTruthy();
    const tx = paymentTransactionOf(decodePaymentSignatureHeader(signature!))!;
    const transactionId = normalizeTransactionId(tx.transactionId!.toString())!;
    const validUntil = tx.transactionId!.validStart!.toDate().getTime() + VALID_S * 1000;

    // the ledger decides: a passport charged exactly the price, or the payment back (or never taken, and no longer able to be)
    const outcome = await eventually(
      async () => {
        const moved = (await mirror.getTransaction(transactionId))?.result === 'SUCCESS';
        const nfts = (await mirror.getAccountNfts(agent.accountId, { tokenId: ps.stack.deployment.passportTokenId })).length;
        const paid = before - (await mirror.getHbarBalance(agent.accountId))!;
        if (moved && nfts === 1 && paid === PRICE) return 'passport';
        if (moved && nfts === 0 && paid === 0n) return 'refunded';
        if (!moved && nfts === 0 && paid === 0n && Date.now() > validUntil + 20_000) return 'nothing taken';
        return `not yet: moved ${moved}, ${nfts} passport(s), paid ${paid} tinybars`;
      },
      (v) => !v.startsWith('not yet'),
      150_000,
      250,
    );
    // and the service's own record agrees and is final (no payment left to settle, no claim pending)
    const record = await eventually(
      async () => {
        const [p] = await ps.sql<{ status: string }[]>`select status from payments where transaction_id = ${transactionId}`;
        const [claim] = await ps.sql<{ status: string }[]>`select status from passport_issuances where payment_transaction_id = ${transactionId}`;
        return `${p?.status ?? 'none'}/${claim?.status ?? 'none'}`;
      },
      (state) => ['settled/issued', 'refunded/refunded', 'failed/failed', 'none/none'].includes(state),
      60_000,
      250,
    );
    console.log(`[payment kill] ${point}: ${outcome} (${record})`);
    expect({ point, outcome, record }).toEqual({
      point,
      outcome: point === 'after-start' || point === 'after-settle' ? 'passport' : 'nothing taken',
      record: { 'after-verify': 'none/none', 'after-record': 'failed/failed', 'after-start': 'settled/issued', 'after-settle': 'settled/issued' }[point],
    });
  });
});
