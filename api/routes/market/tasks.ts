/**
 * Marketplace task routes (SPEC 3, 4.4a; DESIGN.md sections 6 "Marketplace escrow" and 10): HTTP
 * only. Each route parses, authorises (DID signature headers, or a -with-key body key proving the
 * DID: one named handler serves both twins, the key proved once), calls the marketplace (api/market/: posting.ts, steps.ts, updates.ts) and maps the answer
 * (api/market/views.ts: the task; a step still running is WorkflowPending, answered 202).
 *
 *   POST /market/tasks                          DID-signed; poster passport on the ledger
 *   POST /market/tasks/signed                   posterDid + posterPrivateKey: the schedule is signed here (funded)
 *                                               (both: optional Idempotency-Key header, recorded before the
 *                                               workflow starts; a retry answers the same task)
 *   GET  /market/tasks, /market/tasks/{taskId}  from memory (NOTIFY-fed; deep pages of closed tasks from PostgreSQL,
 *                                               api/market/taskBook.ts); a delivered result only to the
 *                                               parties (a DID-signed GET of one task) until completion
 *   POST .../claim, .../claim-with-key          claimer passport on the ledger
 *   POST .../deliver, .../deliver-with-key      resultBody <= 4096 bytes or resultIpfs
 *   POST .../cancel, .../increase-reward        DID-signed, poster only
 *   POST .../complete (DID-signed), .../complete-with-key
 *                                               with escrow: posterPrivateKey signs the pending schedules here;
 *                                               without escrow: the poster's signed transfer (api/market/payment.ts)
 *   GET  .../escrow-status
 *
 * A private key from a body signs inside this process only, is never logged, stored or handed to a
 * workflow.
 */
import { bodyDid } from '../../auth/bodyDid.js';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PrivateKey } from '@hashgraph/sdk';
import type { AppContext } from '../../context.js';
import { errorResponses, type ZodRequest } from '../../schemas/common.js';
import {
  claimBodySchema,
  claimWithKeyBodySchema,
  completeBodySchema,
  completeWithKeyBodySchema,
  deliverBodySchema,
  deliverWithKeyBodySchema,
  escrowStatusSchema,
  increaseRewardBodySchema,
  posterBodySchema,
  taskIdParams,
  taskListQuerySchema,
  taskListSchema,
  taskPostBodySchema,
  taskPostHeadersSchema,
  taskPostSignedBodySchema,
  taskReadHeadersSchema,
  taskSchema,
} from '../../schemas/market.js';
import { requireOwnPrivateKey } from '../../auth/ownKey.js';
import { partyOf } from '../../market/parties.js';
import { postFundedTask, postTask } from '../../market/posting.js';
import { cancelTask, claimTask, completeTask, deliverTask, increaseReward } from '../../market/steps.js';
import { readTask } from '../../market/updates.js';
import { escrowStatusView, publicTaskJson, taskResponse } from '../../market/views.js';
import { sendJson } from '../../serializer.js';


const postResponses = { 200: taskSchema, ...errorResponses(202, 400, 401, 403, 409, 500, 502, 503) };

const taskPostSchema = {
  tags: ['market'],
  summary: 'Post a task (DID signature headers; the signed DID must be posterDid)',
  description:
    'Creates the task and, unless escrow is false, a scheduled transfer of the price from the poster to the escrow account (escrowStatus scheduled). ' +
    'The poster signs the schedule at completion (posterPrivateKey), or at once with POST /market/tasks/signed (funded). ' +
    'Gold and platinum passports only (403 market_tier_required). An escrow still unfunded after MARKET_FUNDING_WINDOW_S is cancelled; a claim ' +
    'lapses after the claim window (claimWindowHours); a delivered escrow task is paid to the claimer after the review window (reviewWindowHours) ' +
    'unless the poster completes or cancels first. Per poster: MARKET_UNFUNDED_TASKS_MAX open unfunded tasks, MARKET_POSTS_PER_DAY posts (429).',
  body: taskPostBodySchema,
  headers: taskPostHeadersSchema,
  response: postResponses,
};

const taskPostSignedSchema = {
  tags: ['market'],
  summary: "Post a task and fund its escrow with the poster's key",
  description:
    'posterPrivateKey signs the escrow schedule (a ScheduleSign paid by the service) inside this process; it is never stored, logged or returned. ' +
    'The schedule executes and the price sits in the escrow account: escrowStatus funded.',
  body: taskPostSignedBodySchema,
  headers: taskPostHeadersSchema,
  response: postResponses,
};

const stepResponses = (...extra: number[]) => ({ 200: taskSchema, ...errorResponses(202, 400, 401, 403, 404, 500, 502, 503, ...extra) });

const claimSchema = { tags: ['market'], summary: 'Claim a posted task (DID signature headers; the signed DID must be claimerDid; gold or platinum passport; lapses after the claim window without a delivery)', params: taskIdParams, body: claimBodySchema, response: stepResponses(409) };
const claimWithKeySchema = { tags: ['market'], summary: "Claim a posted task, proving the claimer by the account's key", params: taskIdParams, body: claimWithKeyBodySchema, response: stepResponses(409) };
const deliverSchema = {
  tags: ['market'],
  summary: 'Deliver a result (claimer only; DID signature headers): resultBody at most 4096 bytes, or resultIpfs',
  params: taskIdParams,
  body: deliverBodySchema,
  response: stepResponses(409),
};
const deliverWithKeySchema = { tags: ['market'], summary: "Deliver a result, proving the claimer by the account's key", params: taskIdParams, body: deliverWithKeyBodySchema, response: stepResponses(409) };
const completeSchema = {
  tags: ['market'],
  summary: 'Complete a delivered task and pay the claimer (poster; DID signature headers)',
  description:
    'With escrow (scheduleId present): posterPrivateKey is required, signs the pending escrow schedule here (memory only), then the escrow ' +
    'account pays the claimer the price less MARKET_FEE_BPS and the treasury the fee (escrowStatus released, paymentTxId). ' +
    '409 market_escrow_underfunded while the escrow holds less than a raised price: a top-up schedule is created and the next complete signs it. ' +
    'Without escrow: txBytes + publicKey + signature of the transfer from POST prepare-payment, or posterPrivateKey.',
  params: taskIdParams,
  body: completeBodySchema,
  response: stepResponses(409),
};
const completeWithKeySchema = {
  tags: ['market'],
  summary: "Complete a delivered task with the poster's key: signs, submits, pays; returns paymentTxId",
  params: taskIdParams,
  body: completeWithKeyBodySchema,
  response: stepResponses(409),
};

const cancelSchema = {
  tags: ['market'],
  summary: 'Cancel a task (poster; DID signature headers): the schedule is deleted (cancelled) or the escrow refunded (refunded)',
  params: taskIdParams,
  body: posterBodySchema,
  response: stepResponses(),
};
const increaseRewardSchema = {
  tags: ['market'],
  summary: 'Raise the price (poster; posted or claimed): a scheduled escrow is replaced, a funded one gets a top-up schedule',
  params: taskIdParams,
  body: increaseRewardBodySchema,
  response: stepResponses(),
};

const marketTaskRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app) => {
  const market = app.market;
  const keys = market.ledger.keys;

  app.post('/market/tasks', { schema: taskPostSchema, preHandler: app.signedRequest(bodyDid('posterDid')) }, async function postSigned(request) {
    return taskResponse(await postTask(market, '/market/tasks', request.body, request.headers['idempotency-key']), request.body.posterDid);
  });

  app.post('/market/tasks/signed', { schema: taskPostSignedSchema }, async function postWithKey(request) {
    const { posterPrivateKey, ...body } = request.body;
    const key = await requireOwnPrivateKey(keys, partyOf(market, body.posterDid, 'posterDid'), posterPrivateKey, 'posterPrivateKey', 'poster');
    return taskResponse(await postFundedTask(market, body, key, request.headers['idempotency-key']), body.posterDid);
  });

  // ---------------------------------------------------------------- reads

  // The answered list pages, by URL, until the task book changes: the front page is the same bytes for
  // every visitor between two changes, so it is made once and sent as a Buffer (no serialising, no
  // string-to-bytes conversion per request). Bounded in bytes; cleared on every change.
  const pages = new PageMemo(16 * 1024 * 1024);

  app.get(
    '/market/tasks',
    {
      schema: {
        tags: ['market'],
        summary: 'Tasks, newest first (filters: capability, status, posterDid, claimerDid; limit 1-100, default 20; offset)',
        querystring: taskListQuerySchema,
        response: { 200: taskListSchema, ...errorResponses(400, 500, 503) },
      },
    },
    async (request, reply) => {
      const { limit, offset, ...filter } = request.query;
      await market.book.ready();
      const version = market.book.version;
      if (version !== pages.version) pages.clear(version);
      let body = pages.get(request.url);
      if (!body) {
        const { tasks, total } = await market.book.page(filter, limit, offset);
        // the list's shape (taskListSchema) around tasks serialised once each (records are immutable values)
        body = Buffer.from(`{"tasks":[${tasks.map(publicTaskJson).join(',')}],"count":${tasks.length},"total":${total},"limit":${limit},"offset":${offset}}`);
        // kept only if the book did not move while the page was read (a deep page awaits PostgreSQL)
        if (market.book.version === version) pages.set(request.url, body);
      }
      return sendJson(reply, body);
    },
  );

  app.get(
    '/market/tasks/:taskId',
    {
      schema: {
        tags: ['market'],
        summary: 'One task (DID signature headers optional: the poster and the claimer read the delivered result)',
        description:
          'Anyone reads the task. Until it is completed, resultBody and resultIpfs are answered only to its poster and its claimer, who send the DID ' +
          'signature headers (X-Service-DID, X-Service-Challenge from GET /auth/challenge, X-Service-Signature); everyone else (anonymous, or signed by ' +
          'another DID) gets the task without them, with resultSha256 and the status. A completed task answers its result to anyone. ' +
          'Headers present but not verifying: 401 as on every signed route. Lists (GET /market/tasks) never carry a result before completion.',
        params: taskIdParams,
        headers: taskReadHeadersSchema,
        response: { 200: taskSchema, ...errorResponses(400, 401, 404, 503) },
      },
      preHandler: app.signedRequest(undefined, { optional: true }),
    },
    async (request, reply) => {
      const task = await readTask(market, request.params.taskId);
      // a party's answer may carry what others may not see: never kept by a shared cache
      if (request.auth) reply.header('cache-control', 'private, no-store');
      return taskResponse(task, request.auth?.did);
    },
  );

  app.get(
    '/market/tasks/:taskId/escrow-status',
    {
      schema: {
        tags: ['market'],
        summary: "The task's escrow: schedule, status, verification attempts, verifier, price",
        params: taskIdParams,
        response: { 200: escrowStatusSchema, ...errorResponses(404, 503) },
      },
    },
    async (request) => escrowStatusView(market, await readTask(market, request.params.taskId)),
  );

  // ---------------------------------------------------------------- steps
  // One named handler per step; a -with-key twin differs only in how the party is proved: the
  // signature route's preHandler, or the key in the body, proved here once (and handed on to the
  // step that signs with it).

  /** The key in a -with-key body, proved to be the party's account key (400, 403 auth_did_mismatch). */
  const proveKey = (did: string, didField: string, key: string, keyField: string, role: string): Promise<PrivateKey> =>
    requireOwnPrivateKey(keys, partyOf(market, did, didField), key, keyField, role);

  /** POST .../claim and .../claim-with-key. */
  async function claim(request: ZodRequest<typeof claimSchema> | ZodRequest<typeof claimWithKeySchema>) {
    const body = request.body;
    if ('claimerPrivateKey' in body) await proveKey(body.claimerDid, 'claimerDid', body.claimerPrivateKey, 'claimerPrivateKey', 'claimer');
    return taskResponse(await claimTask(market, request.params.taskId, body.claimerDid), body.claimerDid);
  }

  /** POST .../deliver and .../deliver-with-key (the key never goes further than this handler). */
  async function deliver(request: ZodRequest<typeof deliverSchema> | ZodRequest<typeof deliverWithKeySchema>) {
    const { claimerPrivateKey, ...delivery } = { claimerPrivateKey: undefined, ...request.body };
    if (claimerPrivateKey !== undefined) await proveKey(delivery.claimerDid, 'claimerDid', claimerPrivateKey, 'claimerPrivateKey', 'claimer');
    return taskResponse(await deliverTask(market, request.params.taskId, delivery), delivery.claimerDid);
  }

  /** POST .../complete and .../complete-with-key: a key proved here signs the payment (completeTask does not prove it again). */
  async function complete(request: ZodRequest<typeof completeSchema> | ZodRequest<typeof completeWithKeySchema>, keyed: boolean) {
    const body = request.body;
    const posterKey = keyed && body.posterPrivateKey !== undefined ? await proveKey(body.posterDid, 'posterDid', body.posterPrivateKey, 'posterPrivateKey', 'poster') : undefined;
    return taskResponse(await completeTask(market, request.params.taskId, body, posterKey), body.posterDid);
  }

  /** POST .../cancel. */
  async function cancel(request: ZodRequest<typeof cancelSchema>) {
    return taskResponse(await cancelTask(market, request.params.taskId, request.body), request.body.posterDid);
  }

  /** POST .../increase-reward. */
  async function raiseReward(request: ZodRequest<typeof increaseRewardSchema>) {
    return taskResponse(await increaseReward(market, request.params.taskId, request.body), request.body.posterDid);
  }

  app.post('/market/tasks/:taskId/claim', { schema: claimSchema, preHandler: app.signedRequest(bodyDid('claimerDid')) }, claim);
  app.post('/market/tasks/:taskId/claim-with-key', { schema: claimWithKeySchema }, claim);
  app.post('/market/tasks/:taskId/deliver', { schema: deliverSchema, preHandler: app.signedRequest(bodyDid('claimerDid')) }, deliver);
  app.post('/market/tasks/:taskId/deliver-with-key', { schema: deliverWithKeySchema }, deliver);
  app.post('/market/tasks/:taskId/cancel', { schema: cancelSchema, preHandler: app.signedRequest(bodyDid('posterDid')) }, cancel);
  app.post('/market/tasks/:taskId/increase-reward', { schema: increaseRewardSchema, preHandler: app.signedRequest(bodyDid('posterDid')) }, raiseReward);
  app.post('/market/tasks/:taskId/complete', { schema: completeSchema, preHandler: app.signedRequest(bodyDid('posterDid')) }, (request) => complete(request, false));
  app.post('/market/tasks/:taskId/complete-with-key', { schema: completeWithKeySchema }, (request) => complete(request, true));
};

export default marketTaskRoutes;

/** Bodies by key, all dropped when the version they were made at moves or their bytes pass `maxBytes`. */
class PageMemo {
  version = -1;
  private readonly bodies = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  clear(version: number): void {
    this.version = version;
    this.bodies.clear();
    this.bytes = 0;
  }

  get(key: string): Buffer | undefined {
    return this.bodies.get(key);
  }

  set(key: string, body: Buffer): void {
    if (this.bytes + body.length > this.maxBytes) this.clear(this.version);
    this.bodies.set(key, body);
    this.bytes += body.length;
  }
}
