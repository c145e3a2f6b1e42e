// A2A messaging end to end over HTTP: agents with real passports (bought over x402), messages sent
// with the sender's key, with the client's own signed transaction bytes and through the deprecated
// operator-paid route, read back from the inbox, the conversation and localnet's mirror.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountId, PrivateKey, TopicMessageSubmitTransaction, TransactionId, TransferTransaction, Hbar } from '@hashgraph/sdk';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.js';
import { A2A_MAX_BODY_BYTES, encodeEnvelope, envelopeOf } from '@agent-passport/core/a2a';
import { parsePrivateKey } from '@agent-passport/core/keys';
import { signTopicMessage, splitChunks } from '../../ledger/topicSubmission.js';
import type { A2aLedgerActivities } from '../../activities/ledger/a2a.js';
import { joinTopicMessages, toMirrorTransactionId } from '../../ledger/mirror.js';
import type { TestAgent } from '../support/signing.js';
import { signedHeaders } from '../support/signing.js';
import { testConfig } from '../support/app.js';
import { ADMIN_TOKEN, getJson, recordFixture, startPassportStack, type PassportStack, buyPassport } from './passportHarness.js';

type Json = Record<string, any>;

describe('A2A messaging end to end (localnet topic, Temporal workflow, inbox projection)', () => {
  let ps: PassportStack;
  let agents: TestAgent[];
  let alice: TestAgent; // ED25519
  let bob: TestAgent; // ECDSA
  let carol: TestAgent; // ED25519
  let revoked: TestAgent; // passport revoked
  let nobody: TestAgent; // never had a passport
  let topicId: string;
  let node: { address: string; accountId: string };
  let logApp: FastifyInstance;
  const logLines: string[] = [];

  const key = (a: TestAgent) => parsePrivateKey(a.privateKey, a.keyType);
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}, base = ps.baseUrl) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json, headers: res.headers };
  };
  const signedSend = async (path: string, signer: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, signer));
  const topicCount = async () => (await ps.stack.ledger.mirror.getTopicMessages(topicId)).length;

  /** What an independent client does for send-signed: the SDK recipe of the route's description. */
  const buildSigned = async (sender: TestAgent, msg: { from: string; to: string; body: string; contentType?: string }, opts: { sign?: boolean; payer?: string; topic?: string } = {}) => {
    const envelope = encodeEnvelope(envelopeOf(msg));
    const tx = new TopicMessageSubmitTransaction()
      .setTopicId(opts.topic ?? topicId)
      .setMessage(envelope)
      .setChunkSize(1024)
      .setMaxChunks(Math.ceil(envelope.length / 1024))
      .setNodeAccountIds([AccountId.fromString(node.accountId)])
      .setTransactionId(TransactionId.generate(AccountId.fromString(opts.payer ?? sender.accountId)))
      .freeze();
    if (opts.sign !== false) await tx.sign(key(sender));
    return tx;
  };
  const bodyOf = (tx: TopicMessageSubmitTransaction) => (tx as unknown as { _signedTransactions: { list: { bodyBytes: Uint8Array }[] } })._signedTransactions.list[0].bodyBytes;
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

  /** Waits for a 202'd send to show up in the conversation. */
  const waitForMessage = async (a: string, b: string, id: string): Promise<Json> => {
    for (let i = 0; i < 600; i++) {
      const r = await getJson(ps, `/a2a/conversation?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}&limit=100`);
      const found = (r.body.messages as Json[]).find((m) => m.id === id);
      if (found) return found;
      await new Promise((res) => setTimeout(res, 250));
    }
    throw new Error(`message ${id} never appeared`);
  };

  beforeAll(async () => {
    ps = await startPassportStack('a2a');
    await ps.startWorker();
    agents = ps.agents;
    [alice, bob, carol, revoked, nobody] = agents;
    topicId = ps.stack.deployment.topics.a2a;
    node = ps.stack.localnet.config.node;
    for (const a of [alice, bob, carol, revoked]) {
      const r = await buyPassport(ps, a, { tier: 'bronze' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      if (a === revoked) {
        const rv = await post('/admin/revoke', { tokenId: r.body.tokenId, serial: r.body.serialNumber }, { authorization: `Bearer ${ADMIN_TOKEN}` });
        expect(rv.status, JSON.stringify(rv.body)).toBe(200);
      }
    }
    // a second API instance on the same stack whose log stream the tests read
    const stream = new Writable({
      write(chunk, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    logApp = await buildApp(
      { config: testConfig({ ...ps.stack.env, TEMPORAL_TASK_QUEUE: ps.t.taskQueue, RATE_LIMIT_MAX: '100000', LOG_LEVEL: 'trace' }), sql: ps.sql, ledger: ps.stack.ledger, temporal: async () => ps.t.client },
      { logger: { stream } },
    );
    Object.assign(logApp.workflowSettings, ps.state); // the stack's workflow id scope and timings (settings are per app)
    await logApp.listen({ port: 0, host: '127.0.0.1' });
  }, 240_000);
  afterAll(async () => {
    await logApp?.close();
    await ps?.stop();
  });

  const sent: Json[] = [];

  it('send-with-key: the sender pays and signs; the message is on the topic, in the inbox and the conversation', async () => {
    const before = await topicCount();
    const r = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: 'hello bob', senderPrivateKey: alice.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ from: alice.did, to: bob.did, body: 'hello bob', contentType: 'text/plain', chunks: 1, topicId });
    expect(r.body.transactionId.startsWith(`${alice.accountId}@`)).toBe(true);
    expect(r.body.id).toMatch(/^\d+\.\d+\.\d+-\d+-\d+$/);
    expect(r.body.sequenceNumber).toBe(before + 1);
    expect(JSON.stringify(r.body)).not.toContain(alice.privateKey);
    sent.push(r.body);

    // the topic holds the envelope, paid by the sender
    const raw = await ps.stack.ledger.mirror.getTopicMessages(topicId, { afterSequence: before });
    expect(raw).toHaveLength(1);
    expect(raw[0].payer_account_id).toBe(alice.accountId);
    expect(JSON.parse(Buffer.from(raw[0].message, 'base64').toString())).toEqual({ v: 1, type: 'a2a.message', from: alice.did, to: bob.did, contentType: 'text/plain', body: 'hello bob' });

    const inbox = await getJson(ps, `/a2a/inbox?did=${encodeURIComponent(bob.did)}`);
    expect(inbox.status).toBe(200);
    expect(inbox.body.messages[0]).toEqual({
      id: r.body.id, from: alice.did, to: bob.did, body: 'hello bob', contentType: 'text/plain',
      sequenceNumber: r.body.sequenceNumber, consensusTimestamp: r.body.consensusTimestamp, transactionId: r.body.transactionId,
    });
    await recordFixture(ps, ps.workflowId(`a2a:${r.body.transactionId}`), 'a2aMessage');
  });

  it('send-signed: an ECDSA sender builds and signs its own bytes with the SDK; the server never sees the key', async () => {
    const msg = { from: bob.did, to: alice.did, body: '{"reply":"hi alice"}', contentType: 'application/json' };
    const tx = await buildSigned(bob, msg);
    const r = await signedSend('/a2a/send-signed', bob, { ...msg, txBytes: b64(tx.toBytes()) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ ...msg, chunks: 1, transactionId: tx.transactionId!.toString() });
    sent.push(r.body);
    const mirrorTx = await ps.stack.ledger.mirror.getTransaction(tx.transactionId!.toString());
    expect(mirrorTx?.result).toBe('SUCCESS');

    // the same bytes sent again (a client retry) give the same message, submitted once
    const before = await topicCount();
    const again = await signedSend('/a2a/send-signed', bob, { ...msg, txBytes: b64(tx.toBytes()) });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.id).toBe(r.body.id);
    expect(await topicCount()).toBe(before);
  });

  it('send-signed with a detached signature and public key over unsigned bytes', async () => {
    const msg = { from: carol.did, to: alice.did, body: 'detached' };
    const tx = await buildSigned(carol, msg, { sign: false });
    const bytes = tx.toBytes();
    // a detached signature over the one chunk body the transaction holds
    const signature = Buffer.from(key(carol).sign(bodyOf(tx))).toString('hex');
    const r = await signedSend('/a2a/send-signed', carol, { ...msg, txBytes: b64(bytes), signature, publicKey: key(carol).publicKey.toStringDer() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ ...msg, chunks: 1 });
  });

  it('POST /a2a/send (deprecated): operator pays; Deprecation and Link headers name the successors', async () => {
    const noAuth = await post('/a2a/send', { from: alice.did, to: bob.did, body: 'x' });
    expect([noAuth.status, noAuth.body.code]).toEqual([401, 'auth_header_missing']);
    expect(noAuth.headers.get('deprecation')).toMatch(/^@\d+$/);

    const r = await signedSend('/a2a/send', alice, { from: alice.did, to: bob.did, body: 'the old way' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get('deprecation')).toMatch(/^@\d+$/);
    const link = r.headers.get('link') ?? '';
    expect(link).toContain('</a2a/send-with-key>; rel="successor-version"');
    expect(link).toContain('</a2a/send-signed>; rel="successor-version"');
    expect(r.body.transactionId.startsWith(`${ps.stack.deployment.operator.accountId}@`)).toBe(true);
    sent.push(r.body);
  });

  it('inbox is newest first and conversation oldest first in both directions, both paginated', async () => {
    const [ab1, ba, ab2] = [sent[0], sent[1], sent[2]];
    const conv = await getJson(ps, `/a2a/conversation?a=${encodeURIComponent(alice.did)}&b=${encodeURIComponent(bob.did)}`);
    expect(conv.status).toBe(200);
    expect(conv.body.messages.map((m: Json) => m.id)).toEqual([ab1.id, ba.id, ab2.id]);
    expect(conv.body).toMatchObject({ count: 3, total: 3, limit: 20, offset: 0 });
    const swapped = await getJson(ps, `/a2a/conversation?a=${encodeURIComponent(bob.did)}&b=${encodeURIComponent(alice.did)}&limit=2&offset=1`);
    expect(swapped.body.messages.map((m: Json) => m.id)).toEqual([ba.id, ab2.id]);
    expect(swapped.body).toMatchObject({ count: 2, total: 3, limit: 2, offset: 1 });

    const inbox = await getJson(ps, `/a2a/inbox?did=${encodeURIComponent(bob.did)}`);
    expect(inbox.body.messages.map((m: Json) => m.id)).toEqual([ab2.id, ab1.id]);
    const page = await getJson(ps, `/a2a/inbox?did=${encodeURIComponent(bob.did)}&limit=1&offset=1`);
    expect(page.body).toMatchObject({ count: 1, total: 2, limit: 1, offset: 1 });
    expect(page.body.messages[0].id).toBe(ab1.id);
    const aliceInbox = await getJson(ps, `/a2a/inbox?did=${encodeURIComponent(alice.did)}`);
    expect(aliceInbox.body.total).toBe(2); // from bob and carol

    expect((await getJson(ps, '/a2a/inbox?did=not-a-did')).status).toBe(400);
    expect((await getJson(ps, '/a2a/inbox')).status).toBe(400);
    expect((await getJson(ps, `/a2a/inbox?did=${encodeURIComponent(bob.did)}&limit=101`)).status).toBe(400);
    expect((await getJson(ps, `/a2a/conversation?a=${encodeURIComponent(bob.did)}`)).status).toBe(400);
  });

  it('a 200 KB message goes through chunks and comes back whole from the mirror and the inbox', async () => {
    const body = 'A2A-'.repeat(50 * 1024); // 200 KiB
    const before = await topicCount();
    const r = await post('/a2a/send-with-key', { from: carol.did, to: bob.did, body, senderPrivateKey: carol.privateKey });
    expect([200, 202], JSON.stringify({ ...r.body, body: undefined })).toContain(r.status);
    const envelopeLength = encodeEnvelope(envelopeOf({ from: carol.did, to: bob.did, body })).length;
    const chunks = Math.ceil(envelopeLength / 1024);
    let id: string;
    if (r.status === 200) {
      expect(r.body.chunks).toBe(chunks);
      id = r.body.id;
    } else {
      expect(r.body.code).toBe('request_pending');
      id = toMirrorTransactionId(r.body.workflowId.split('a2a:')[1]);
    }
    const m = await waitForMessage(carol.did, bob.did, id);
    expect(m.body).toBe(body);
    expect(m.body.length).toBe(200 * 1024);

    // the mirror: chunks joined by chunk_info give back the envelope
    const raw = await ps.stack.ledger.mirror.getTopicMessages(topicId, { afterSequence: before });
    expect(raw).toHaveLength(chunks);
    expect(raw.every((x) => x.chunk_info?.total === chunks && x.payer_account_id === carol.accountId)).toBe(true);
    const joined = joinTopicMessages(raw).messages;
    expect(joined).toHaveLength(1);
    expect(JSON.parse(joined[0].text())).toMatchObject({ from: carol.did, to: bob.did, body });
    expect(m.sequenceNumber).toBe(joined[0].sequenceNumber);
    expect(m.consensusTimestamp).toBe(joined[0].consensusTimestamp);
  }, 240_000);

  it('413 a2a_message_too_large over 256 KB, also past the route body limit; nothing submitted', async () => {
    const before = await topicCount();
    const over = 'x'.repeat(A2A_MAX_BODY_BYTES + 1);
    const r = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: over, senderPrivateKey: alice.privateKey });
    expect([r.status, r.body.code]).toEqual([413, 'a2a_message_too_large']);
    const multiByte = 'é'.repeat(A2A_MAX_BODY_BYTES / 2 + 1); // fewer characters, more bytes
    const r2 = await signedSend('/a2a/send', alice, { from: alice.did, to: bob.did, body: multiByte });
    expect([r2.status, r2.body.code]).toEqual([413, 'a2a_message_too_large']);
    const huge = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: 'y'.repeat(400 * 1024), senderPrivateKey: alice.privateKey });
    expect([huge.status, huge.body.code]).toEqual([413, 'a2a_message_too_large']);
    expect(await topicCount()).toBe(before);
  });

  it('403 and 404: wrong key, DID not the sender, revoked or missing passports; nothing submitted', async () => {
    const before = await topicCount();
    const wrongKey = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: 'x', senderPrivateKey: carol.privateKey });
    expect([wrongKey.status, wrongKey.body.code]).toEqual([403, 'auth_did_mismatch']);
    const notSender = await signedSend('/a2a/send', bob, { from: alice.did, to: carol.did, body: 'x' });
    expect([notSender.status, notSender.body.code]).toEqual([403, 'auth_did_mismatch']);
    const tx = await buildSigned(alice, { from: alice.did, to: bob.did, body: 'x' });
    const notSenderSigned = await signedSend('/a2a/send-signed', bob, { from: alice.did, to: bob.did, body: 'x', txBytes: b64(tx.toBytes()) });
    expect([notSenderSigned.status, notSenderSigned.body.code]).toEqual([403, 'auth_did_mismatch']);

    const revokedSender = await post('/a2a/send-with-key', { from: revoked.did, to: bob.did, body: 'x', senderPrivateKey: revoked.privateKey });
    expect(revokedSender.status).toBe(403);
    const revokedRecipient = await post('/a2a/send-with-key', { from: alice.did, to: revoked.did, body: 'x', senderPrivateKey: alice.privateKey });
    expect(revokedRecipient.status).toBe(403);
    const noPassportSender = await post('/a2a/send-with-key', { from: nobody.did, to: bob.did, body: 'x', senderPrivateKey: nobody.privateKey });
    expect(noPassportSender.status).toBe(403);
    const unknownRecipient = await post('/a2a/send-with-key', { from: alice.did, to: nobody.did, body: 'x', senderPrivateKey: alice.privateKey });
    expect([unknownRecipient.status, unknownRecipient.body.code]).toEqual([404, 'a2a_recipient_not_found']);
    const badDid = await post('/a2a/send-with-key', { from: alice.did, to: 'did:web:example.com', body: 'x', senderPrivateKey: alice.privateKey });
    expect(badDid.status).toBe(400);
    const badKey = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: 'x', senderPrivateKey: 'not-a-key' });
    expect(badKey.status).toBe(400);
    expect(JSON.stringify(badKey.body)).not.toContain('not-a-key');
    expect(await topicCount()).toBe(before);
  });

  it('send-signed refuses tampered or foreign bytes with 400/403 and submits nothing', async () => {
    const before = await topicCount();
    const msg = { from: alice.did, to: bob.did, body: 'hello there' };
    const send = (body: Json) => signedSend('/a2a/send-signed', alice, body);

    // tampered after signing: one byte of the envelope changed ("hello" -> "jello"), request names the tampered body
    const tx = await buildSigned(alice, msg);
    const bytes = Buffer.from(tx.toBytes());
    const at = bytes.indexOf(Buffer.from('hello there'));
    expect(at).toBeGreaterThan(0);
    bytes[at] = 'j'.charCodeAt(0);
    const tampered = await send({ ...msg, body: 'jello there', txBytes: b64(bytes) });
    expect([tampered.status, tampered.body.code], JSON.stringify(tampered.body)).toEqual([400, 'invalid_request']);
    expect(tampered.body.error).toMatch(/signed/);

    // the envelope does not match the request
    const other = await send({ ...msg, body: 'something else', txBytes: b64((await buildSigned(alice, msg)).toBytes()) });
    expect(other.status).toBe(400);
    // another topic
    const audit = await send({ ...msg, txBytes: b64((await buildSigned(alice, msg, { topic: ps.stack.deployment.topics.audit })).toBytes()) });
    expect(audit.status).toBe(400);
    // paid by someone else (carol pays, alice signs as sender)
    const payer = await send({ ...msg, txBytes: b64((await buildSigned(alice, msg, { payer: carol.accountId })).toBytes()) });
    expect([payer.status, payer.body.code]).toEqual([403, 'auth_did_mismatch']);
    // unsigned
    const unsigned = await send({ ...msg, txBytes: b64((await buildSigned(alice, msg, { sign: false })).toBytes()) });
    expect(unsigned.status).toBe(400);
    // not a topic message at all
    const transfer = new TransferTransaction()
      .addHbarTransfer(alice.accountId, new Hbar(-1))
      .addHbarTransfer(bob.accountId, new Hbar(1))
      .setNodeAccountIds([AccountId.fromString(node.accountId)])
      .setTransactionId(TransactionId.generate(alice.accountId))
      .freeze();
    await transfer.sign(key(alice));
    const notTopic = await send({ ...msg, txBytes: b64(transfer.toBytes()) });
    expect(notTopic.status).toBe(400);
    // garbage
    const garbage = await send({ ...msg, txBytes: b64(Buffer.from('definitely not a transaction')) });
    expect(garbage.status).toBe(400);
    // a detached signature by a key that is not the sender's
    const stranger = PrivateKey.generateED25519();
    const u = await buildSigned(alice, msg, { sign: false });
    const strangerSig = await send({ ...msg, txBytes: b64(u.toBytes()), signature: Buffer.from(stranger.sign(bodyOf(u))).toString('hex'), publicKey: stranger.publicKey.toStringDer() });
    expect(strangerSig.status).toBe(403);

    expect(await topicCount()).toBe(before);
  });

  it('a multi-chunk send-signed (all chunks in one txBytes) is accepted', async () => {
    const msg = { from: alice.did, to: carol.did, body: 'z'.repeat(3000) };
    const tx = await buildSigned(alice, msg);
    const r = await signedSend('/a2a/send-signed', alice, { ...msg, txBytes: b64(tx.toBytes()) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.chunks).toBe(Math.ceil(encodeEnvelope(envelopeOf(msg)).length / 1024));
    const conv = await getJson(ps, `/a2a/conversation?a=${encodeURIComponent(carol.did)}&b=${encodeURIComponent(alice.did)}`);
    expect(conv.body.messages.at(-1).body).toBe(msg.body);
  });

  it("the sender's key never reaches the log, PostgreSQL or the workflow history", async () => {
    const secretKey = key(alice);
    const needles = [alice.privateKey, secretKey.toStringRaw(), secretKey.toStringDer()].map((s) => s.toLowerCase());
    const base = `http://127.0.0.1:${(logApp.server.address() as { port: number }).port}`;
    const ok = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: 'logged send', senderPrivateKey: alice.privateKey }, {}, base);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const refused = await post('/a2a/send-with-key', { from: alice.did, to: nobody.did, body: 'x', senderPrivateKey: alice.privateKey }, {}, base);
    expect(refused.status).toBe(404);
    const invalid = await post('/a2a/send-with-key', { from: alice.did, to: bob.did, body: 'x', senderPrivateKey: alice.privateKey, extra: 1 }, {}, base);
    expect(invalid.status).toBe(400);
    const log = logLines.join('').toLowerCase();
    expect(log).toContain('/a2a/send-with-key'); // the requests were logged...
    for (const n of needles) expect(log).not.toContain(n); // ...without the key

    // every row of every table, as text
    const tables = await ps.sql<{ table_name: string }[]>`select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`;
    expect(tables.map((t) => t.table_name)).toContain('a2a_messages');
    for (const { table_name } of tables) {
      for (const n of needles) {
        const [{ count }] = await ps.sql.unsafe(`select count(*)::int as count from "${table_name}" t where lower(t::text) like $1`, [`%${n}%`]);
        expect(count, `${table_name} holds the key`).toBe(0);
      }
    }
    const stored = await ps.sql`select count(*)::int as count from a2a_messages where body = 'logged send'`;
    expect(stored[0].count).toBe(1);

    // the workflow history (payloads are plain JSON on this test worker, so a text search sees them)
    const history = await ps.t.client.workflow.getHandle(ps.workflowId(`a2a:${ok.body.transactionId}`)).fetchHistory();
    const events = JSON.stringify(history, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') + Buffer.from(v).toString('hex') : v)).toLowerCase();
    expect(events).toContain('a2amessage');
    for (const n of needles) expect(events).not.toContain(n);
  });

  it('the OpenAPI document describes the routes, the send-signed recipe and the deprecation', async () => {
    const doc = (await getJson(ps, '/openapi.json')).body;
    for (const p of ['/a2a/send', '/a2a/send-with-key', '/a2a/send-signed', '/a2a/inbox', '/a2a/conversation']) expect(doc.paths[p], p).toBeTruthy();
    expect(doc.paths['/a2a/send'].post.deprecated).toBe(true);
    expect(doc.paths['/a2a/send-signed'].post.description).toContain('TopicMessageSubmitTransaction');
    expect(doc.paths['/a2a/send-signed'].post.description).toContain('TransactionId.generate');
  });

  it('a retried chunk submission (same idempotency key) reuses the recorded outcome and submits nothing again', async () => {
    const envelope = encodeEnvelope(envelopeOf({ from: alice.did, to: bob.did, body: 'r'.repeat(1500) }));
    const sub = await signTopicMessage({ topicId, message: envelope, payerAccountId: alice.accountId, nodeAccountIds: [node.accountId], key: key(alice), chunkSize: 1024 });
    const chunks = splitChunks(sub).map(b64);
    const acts = ps.activities as unknown as A2aLedgerActivities;
    const idempotencyKey = `${ps.t.taskQueue}/retry-test`;
    const before = await topicCount();
    const first = await acts.submitA2aChunks({ idempotencyKey, chunks });
    expect(first.sequenceNumbers).toEqual([before + 1, before + 2]);
    const again = await acts.submitA2aChunks({ idempotencyKey, chunks });
    expect(again).toEqual(first);
    expect(await topicCount()).toBe(before + 2);
  });

  it('the operator-paid /a2a/send has a daily byte budget per sender, shared by every instance; the sender-paid routes have none (issue 20 item 7)', async () => {
    const clock = new Date('2031-08-01T12:00:00.000Z');
    const msg = (n: number) => ({ from: carol.did, to: bob.did, body: `budget ${n} `.padEnd(600, 'b') });
    const bytes = encodeEnvelope(envelopeOf(msg(1))).length;
    const budget = 2 * bytes + 10;
    // two API instances on one database, both with the small budget
    const instance = async () => {
      const config = testConfig({ ...ps.stack.env, TEMPORAL_TASK_QUEUE: ps.t.taskQueue, RATE_LIMIT_MAX: '100000', A2A_OPERATOR_DAILY_BYTES: String(budget) });
      const app = await buildApp({ config, sql: ps.sql, ledger: ps.stack.ledger, temporal: async () => ps.t.client, now: () => clock }, { logger: false });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      return { app, send: async (body: unknown) => post('/a2a/send', body, await signedHeaders(app, carol), base) };
    };
    const one = await instance();
    const two = await instance();
    try {
      // both operator-paid sends are on the topic before counting (a 202 lands later)
      for (const r of [await one.send(msg(1)), await two.send(msg(2))]) {
        expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
        await waitForMessage(carol.did, bob.did, r.status === 200 ? r.body.id : toMirrorTransactionId(r.body.workflowId.split('a2a:')[1]));
      }
      const before = await topicCount();
      const refused = await one.send(msg(3));
      expect([refused.status, refused.body.code]).toEqual([429, 'a2a_operator_budget_exceeded']);
      expect(refused.body.hint).toContain('/a2a/send-signed');
      expect(refused.headers.get('x-ratelimit-limit')).toBe(String(budget));
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('10');
      expect(refused.headers.get('x-ratelimit-reset')).toBe(String(Date.parse('2031-08-02T00:00:00.000Z') / 1000));
      expect(refused.headers.get('retry-after')).toBe(String(12 * 3600));
      expect(refused.headers.get('deprecation')).toMatch(/^@\d+$/);
      // the other instance counts the same budget
      expect((await two.send(msg(4))).status).toBe(429);
      expect(await topicCount()).toBe(before); // nothing submitted, nothing paid
      // the sender pays: no budget
      const own = await post('/a2a/send-with-key', { ...msg(3), senderPrivateKey: carol.privateKey }, {}, ps.baseUrl);
      expect([200, 202], JSON.stringify(own.body)).toContain(own.status);
      // another sender has its own budget
      expect([200, 202]).toContain((await post('/a2a/send', { from: bob.did, to: carol.did, body: 'mine' }, await signedHeaders(one.app, bob), ps.baseUrl)).status);
    } finally {
      await one.app.close();
      await two.app.close();
    }
  });

  it('send-signed without signature headers is 401', async () => {
    const msg = { from: alice.did, to: bob.did, body: 'x' };
    const r = await post('/a2a/send-signed', { ...msg, txBytes: b64((await buildSigned(alice, msg)).toBytes()) });
    expect([r.status, r.body.code]).toEqual([401, 'auth_header_missing']);
  });
});
