// Payments of tasks without escrow, /market/sign and verify, end to end: the real taskLifecycle
// workflow on a worker, localnet, PostgreSQL and the API over HTTP. Tasks are started and moved to
// delivered through the workflow's own Updates (the posting and claim routes have their own suite);
// everything this file is about goes over HTTP: prepare-payment, /market/sign, complete with a
// detached signature / signed bytes / the poster's key, verify. Amounts are proven by balances.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { Transaction } from '@hashgraph/sdk';
import type { WorkflowHandle } from '@temporalio/client';
import { hbarToTinybars, payoutOf, postedTask, type VerifierType } from '../../domain/market.js';
import { sha256Hex } from '../../domain/hash.js';
import { parsePrivateKey, parsePublicKey, verifySignature } from '@agent-passport/core/keys';
import { singleBodyBytes } from '../../ledger/transferCheck.js';
import { createMarketVerifierActivities } from '../../activities/web/marketVerifier.js';
import { claimUpdate, deliverUpdate, taskLifecycleContract, taskStateQuery, taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { boundUpdateArgument, startAuthorisedTask } from '../support/boundMessages.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { startPassportStack, type PassportStack, buyPassport } from './passportHarness.js';

type Json = Record<string, any>;
const FEE_BPS = 250;

describe('marketplace payments without escrow, /market/sign and verify', () => {
  let ps: PassportStack;
  let poster: TestAgent; // ED25519
  let posterEcdsa: TestAgent; // ECDSA
  let claimer: TestAgent;
  let treasury: string;
  let verifierServer: http.Server;
  let verifierUrl: string;

  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${ps.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const signedPost = async (path: string, agent: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, agent));

  /** A task posted without escrow, started as the posting route starts it, then claimed and (optionally) delivered. */
  async function deliveredTask(
    p: TestAgent,
    opts: { priceHbar?: number; verifierType?: VerifierType; verifierConfig?: Record<string, unknown> | null; resultBody?: string; deliver?: boolean; escrow?: boolean } = {},
  ): Promise<{ taskId: string; handle: WorkflowHandle }> {
    const taskId = uuidv7();
    const priceHbar = opts.priceHbar ?? 10;
    const task = postedTask(
      {
        taskId,
        title: `payment test ${taskId.slice(-6)}`,
        description: '',
        priceHbar,
        priceTinybars: hbarToTinybars(priceHbar)!.toString(),
        capabilities: ['data_provide'],
        posterDid: p.did,
        verifierType: opts.verifierType ?? 'none',
        verifierConfig: opts.verifierConfig ?? null,
        deadline: null,
        feeBps: FEE_BPS,
        escrow: opts.escrow ?? false,
      },
      new Date().toISOString(),
    );
    const handle = await startAuthorisedTask(ps.sql, ps.t.client, { task, timings: ps.state.timings }, {
      taskQueue: ps.t.taskQueue,
      workflowId: taskWorkflowId(taskId),
    });
    await handle.executeUpdate(claimUpdate, { args: [boundUpdateArgument(handle, claimUpdate, { claimerDid: claimer.did })] });
    if (opts.deliver !== false) {
      const resultBody = opts.resultBody ?? '{"answer":42}';
      await handle.executeUpdate(deliverUpdate, { args: [boundUpdateArgument(handle, deliverUpdate, { claimerDid: claimer.did, resultBody, resultSha256: sha256Hex(resultBody) })] });
    }
    // the routes read the task from the API's memory, kept current by NOTIFY: wait until it shows the step
    const want = opts.deliver === false ? 'claimed' : 'delivered';
    for (let i = 0; ; i++) {
      const r = await fetch(`${ps.baseUrl}/market/tasks/${taskId}`);
      if (r.status === 200 && ((await r.json()) as Json).status === want) break;
      if (i > 300) throw new Error(`task ${taskId} never showed ${want}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    return { taskId, handle };
  }

  /** Balances move by exactly the task amounts; the poster also pays the payment's own transaction fee. */
  async function expectPaid(taskId: string, p: TestAgent, before: { poster: bigint; claimer: bigint; treasury: bigint }, priceHbar: number, paymentTxId: string) {
    const { claimerTinybars, feeTinybars } = payoutOf(hbarToTinybars(priceHbar)!, FEE_BPS);
    const tx = await ps.stack.ledger.mirror.getTransaction(paymentTxId);
    expect(tx?.result).toBe('SUCCESS');
    expect(tx?.name).toBe('CRYPTOTRANSFER');
    expect(Buffer.from(String(tx?.memo_base64), 'base64').toString()).toBe(`task ${taskId} payment`);
    const txFee = BigInt(tx!.charged_tx_fee ?? 0);
    expect(await balance(claimer.accountId)).toBe(before.claimer + claimerTinybars);
    expect(await balance(treasury)).toBe(before.treasury + feeTinybars);
    expect(await balance(p.accountId)).toBe(before.poster - claimerTinybars - feeTinybars - txFee);
  }

  const balancesOf = async (p: TestAgent) => ({ poster: await balance(p.accountId), claimer: await balance(claimer.accountId), treasury: await balance(treasury) });

  beforeAll(async () => {
    ps = await startPassportStack('mpay');
    // the verifier POSTs to a server on 127.0.0.1: this worker's verifier lifts the address rule (TRUST_ALLOW_PRIVATE)
    await ps.startWorker(createMarketVerifierActivities({ allowPrivate: true }) as never);
    [poster, posterEcdsa, claimer] = [ps.agents[0], ps.agents[1], ps.agents[2]];
    expect(poster.keyType).toBe('ED25519');
    expect(posterEcdsa.keyType).toBe('ECDSA');
    treasury = ps.stack.deployment.treasury;
    // the poster's passport is checked on the ledger by prepare-payment (bought over x402 as agents do)
    for (const a of [poster, posterEcdsa]) {
      const r = await buyPassport(ps, a, { tier: 'bronze' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    verifierServer = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { resultBody?: string };
        const passed = typeof body.resultBody === 'string' && body.resultBody.includes('42');
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ passed, reasons: passed ? [] : ['no 42'] }));
      });
    });
    await new Promise<void>((r) => verifierServer.listen(0, '127.0.0.1', r));
    verifierUrl = `http://127.0.0.1:${(verifierServer.address() as AddressInfo).port}/verify`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => verifierServer?.close(() => r()));
    await ps?.stop();
  });

  describe('POST /market/sign', () => {
    it('401 without the DID signature headers', async () => {
      const r = await post('/market/sign', { txBytes: 'AAAA', privateKey: poster.privateKey });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('auth_header_missing');
    });

    it('signs the body bytes with an ED25519 DER key and an ECDSA 0x key; the key is never in the answer', async () => {
      const { taskId } = await deliveredTask(poster);
      const prep = await signedPost(`/market/tasks/${taskId}/prepare-payment`, poster, { posterDid: poster.did });
      expect(prep.status, JSON.stringify(prep.body)).toBe(200);
      const body = singleBodyBytes(Transaction.fromBytes(Buffer.from(prep.body.txBytes, 'base64')));
      const edKey = parsePrivateKey(poster.privateKey, 'ED25519');
      const ecKey = parsePrivateKey(posterEcdsa.privateKey, 'ECDSA');
      for (const [privateKey, key, type] of [
        [poster.privateKey, edKey, 'ED25519'],
        [`0x${ecKey.toStringRaw()}`, ecKey, 'ECDSA'],
      ] as const) {
        const r = await signedPost('/market/sign', poster, { txBytes: prep.body.txBytes, privateKey });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.keyType).toBe(type);
        expect(r.body.publicKey).toBe(key.publicKey.toStringDer());
        expect(r.body.transactionId).toBe(prep.body.txId);
        expect(verifySignature(parsePublicKey(r.body.publicKey), body, r.body.signature)).toBe(true);
        const text = JSON.stringify(r.body).toLowerCase();
        expect(text).not.toContain(key.toStringRaw().toLowerCase());
      }
    });

    it('400 for a malformed key and for bytes that are not a transaction; the key is not echoed', async () => {
      const { taskId } = await deliveredTask(poster);
      const prep = await signedPost(`/market/tasks/${taskId}/prepare-payment`, poster, { posterDid: poster.did });
      const badKey = 'deadbeef'.repeat(5);
      const r1 = await signedPost('/market/sign', poster, { txBytes: prep.body.txBytes, privateKey: badKey });
      expect(r1.status).toBe(400);
      expect(JSON.stringify(r1.body)).not.toContain(badKey);
      const r2 = await signedPost('/market/sign', poster, { txBytes: Buffer.from('not a transaction').toString('base64'), privateKey: poster.privateKey });
      expect(r2.status).toBe(400);
      expect(JSON.stringify(r2.body)).not.toContain(poster.privateKey);
      const r3 = await signedPost('/market/sign', poster, { txBytes: '***', privateKey: poster.privateKey });
      expect(r3.status).toBe(400);
    });
  });

  describe('prepare-payment', () => {
    it('answers the frozen transfer: poster -price, claimer +(price - fee), treasury +fee, resolved ids', async () => {
      const { taskId } = await deliveredTask(poster, { priceHbar: 12.5 });
      const r = await signedPost(`/market/tasks/${taskId}/prepare-payment`, poster, { posterDid: poster.did });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const { claimerTinybars, feeTinybars } = payoutOf(1_250_000_000n, FEE_BPS);
      expect(r.body).toMatchObject({
        taskId,
        payerAccountId: poster.accountId,
        claimerAccountId: claimer.accountId,
        treasuryAccountId: treasury,
        priceHbar: 12.5,
        priceTinybars: '1250000000',
        claimerTinybars: claimerTinybars.toString(),
        feeTinybars: feeTinybars.toString(),
        memo: `task ${taskId} payment`,
      });
      const tx = Transaction.fromBytes(Buffer.from(r.body.txBytes, 'base64'));
      expect(tx.transactionId!.toString()).toBe(r.body.txId);
      expect(r.body.txId.startsWith(`${poster.accountId}@`)).toBe(true);
    });

    it('400 before delivery, 403 for another DID, 404 for an unknown task, 401 unsigned', async () => {
      const { taskId } = await deliveredTask(poster, { deliver: false });
      const early = await signedPost(`/market/tasks/${taskId}/prepare-payment`, poster, { posterDid: poster.did });
      expect(early.status).toBe(400);
      // the status is checked first (SPEC 3 order); on a delivered task another DID is 403
      const delivered = await deliveredTask(poster);
      const other = await signedPost(`/market/tasks/${delivered.taskId}/prepare-payment`, claimer, { posterDid: claimer.did });
      expect(other.status).toBe(403);
      expect(other.body.code).toBe('auth_did_mismatch');
      // a task paid from escrow has no transfer to sign
      const escrowed = await deliveredTask(poster, { escrow: true });
      const esc = await signedPost(`/market/tasks/${escrowed.taskId}/prepare-payment`, poster, { posterDid: poster.did });
      expect(esc.status).toBe(400);
      expect(esc.body.error).toMatch(/escrow/);
      const missing = await signedPost(`/market/tasks/${uuidv7()}/prepare-payment`, poster, { posterDid: poster.did });
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('market_task_not_found');
      const unsigned = await post(`/market/tasks/${taskId}/prepare-payment`, { posterDid: poster.did });
      expect(unsigned.status).toBe(401);
    });
  });

  describe('complete without escrow', () => {
    it('prepare-payment -> /market/sign -> complete { txBytes, signature, publicKey }: the claimer gets price - fee, the treasury the fee', async () => {
      const { taskId, handle } = await deliveredTask(posterEcdsa, { priceHbar: 7 });
      const before = await balancesOf(posterEcdsa);
      const prep = await signedPost(`/market/tasks/${taskId}/prepare-payment`, posterEcdsa, { posterDid: posterEcdsa.did });
      const sig = await signedPost('/market/sign', posterEcdsa, { txBytes: prep.body.txBytes, privateKey: posterEcdsa.privateKey });
      expect(sig.status).toBe(200);
      const done = await signedPost(`/market/tasks/${taskId}/complete`, posterEcdsa, {
        posterDid: posterEcdsa.did,
        txBytes: prep.body.txBytes,
        signature: sig.body.signature,
        publicKey: sig.body.publicKey,
      });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.body.status).toBe('completed');
      expect(done.body.paymentTxId).toBe(prep.body.txId);
      await expectPaid(taskId, posterEcdsa, before, 7, prep.body.txId);
      expect((await handle.query(taskStateQuery)).paymentTxId).toBe(prep.body.txId);
    });

    it('complete with txBytes the client signed itself, and with posterPrivateKey', async () => {
      const a = await deliveredTask(poster, { priceHbar: 3 });
      const beforeA = await balancesOf(poster);
      const prep = await signedPost(`/market/tasks/${a.taskId}/prepare-payment`, poster, { posterDid: poster.did });
      const tx = Transaction.fromBytes(Buffer.from(prep.body.txBytes, 'base64'));
      await tx.sign(parsePrivateKey(poster.privateKey, 'ED25519'));
      const doneA = await signedPost(`/market/tasks/${a.taskId}/complete`, poster, { posterDid: poster.did, txBytes: Buffer.from(tx.toBytes()).toString('base64') });
      expect(doneA.status, JSON.stringify(doneA.body)).toBe(200);
      await expectPaid(a.taskId, poster, beforeA, 3, doneA.body.paymentTxId);

      const b = await deliveredTask(poster, { priceHbar: 2 });
      const beforeB = await balancesOf(poster);
      const doneB = await signedPost(`/market/tasks/${b.taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
      expect(doneB.status, JSON.stringify(doneB.body)).toBe(200);
      expect(JSON.stringify(doneB.body)).not.toContain(poster.privateKey);
      await expectPaid(b.taskId, poster, beforeB, 2, doneB.body.paymentTxId);
    });

    it('refuses a tampered amount, a signature by another key and bytes for another task; nothing moves', async () => {
      const { taskId } = await deliveredTask(poster, { priceHbar: 5 });
      const other = await deliveredTask(poster, { priceHbar: 5 });
      const before = await balancesOf(poster);
      const prep = await signedPost(`/market/tasks/${taskId}/prepare-payment`, poster, { posterDid: poster.did });
      // signed by the claimer's key, presented as the poster's
      const bySomeoneElse = await signedPost('/market/sign', poster, { txBytes: prep.body.txBytes, privateKey: claimer.privateKey });
      const r1 = await signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, txBytes: prep.body.txBytes, signature: bySomeoneElse.body.signature, publicKey: bySomeoneElse.body.publicKey });
      expect(r1.status).toBe(403);
      // the poster's signature but the public key of the poster and a signature over other bytes
      const otherPrep = await signedPost(`/market/tasks/${other.taskId}/prepare-payment`, poster, { posterDid: poster.did });
      const otherSig = await signedPost('/market/sign', poster, { txBytes: otherPrep.body.txBytes, privateKey: poster.privateKey });
      const r2 = await signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, txBytes: prep.body.txBytes, signature: otherSig.body.signature, publicKey: otherSig.body.publicKey });
      expect(r2.status).toBe(400);
      // the other task's transfer (other memo) signed correctly, sent for this task
      const r3 = await signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, txBytes: otherPrep.body.txBytes, signature: otherSig.body.signature, publicKey: otherSig.body.publicKey });
      expect(r3.status).toBe(400);
      expect(await balancesOf(poster)).toEqual(before);
      const [row] = await ps.sql`select status from tasks where task_id = ${taskId}`;
      expect(row.status).toBe('delivered');
    });
  });

  describe('verify', () => {
    it('sha256 and json_schema pass or fail with reasons and count attempts; nothing is completed or paid', async () => {
      const body = '{"answer":42}';
      const ok = await deliveredTask(poster, { verifierType: 'sha256', verifierConfig: { sha256: sha256Hex(body) }, resultBody: body });
      const before = await balancesOf(poster);
      const r1 = await post(`/market/tasks/${ok.taskId}/verify`, {});
      expect(r1.status, JSON.stringify(r1.body)).toBe(200);
      expect(r1.body).toMatchObject({ taskId: ok.taskId, passed: true, reasons: [], verificationAttempts: 1, verifierType: 'sha256', status: 'delivered' });
      // a second verify of the same delivery reuses the first outcome: nothing runs again (issue 20 item 4)
      const r2 = await post(`/market/tasks/${ok.taskId}/verify`, {});
      expect(r2.body).toMatchObject({ passed: true, verificationAttempts: 1, reused: true });

      const schema = { type: 'object', required: ['answer', 'sources'] };
      const bad = await deliveredTask(poster, { verifierType: 'json_schema', verifierConfig: { schema }, resultBody: body });
      const r3 = await post(`/market/tasks/${bad.taskId}/verify`, {});
      expect(r3.status).toBe(200);
      expect(r3.body.passed).toBe(false);
      expect(r3.body.reasons.join(' ')).toMatch(/sources/);
      expect((await bad.handle.query(taskStateQuery)).status).toBe('delivered');
      expect(await balancesOf(poster)).toEqual(before);
    });

    it('http: the poster URL gets the result through the SSRF guard (TRUST_ALLOW_PRIVATE in this worker)', async () => {
      const good = await deliveredTask(poster, { verifierType: 'http', verifierConfig: { url: verifierUrl }, resultBody: 'the answer is 42' });
      const r = await post(`/market/tasks/${good.taskId}/verify`, {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ passed: true, verificationAttempts: 1, verifierType: 'http' });
      const wrong = await deliveredTask(poster, { verifierType: 'http', verifierConfig: { url: verifierUrl }, resultBody: 'no idea' });
      const r2 = await post(`/market/tasks/${wrong.taskId}/verify`, {});
      expect(r2.body).toMatchObject({ passed: false, reasons: ['no 42'] });
    });

    it('400 when not delivered, 404 for an unknown task', async () => {
      const { taskId } = await deliveredTask(poster, { deliver: false });
      const r = await post(`/market/tasks/${taskId}/verify`, {});
      expect(r.status).toBe(400);
      const missing = await post(`/market/tasks/${uuidv7()}/verify`, {});
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('market_task_not_found');
    });
  });
});
