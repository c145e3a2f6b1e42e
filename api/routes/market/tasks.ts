/**
 * Marketplace task routes (SPEC 3, 4.4a; DESIGN.md sections 6 "Marketplace escrow" and 10):
 *
 *   POST /market/tasks                          DID-signed; poster passport on the ledger
 *   POST /market/tasks/signed                   posterDid + posterPrivateKey: the schedule is signed here (funded)
 *                                               (both: optional Idempotency-Key header, recorded before the
 *                                               workflow starts; a retry answers the same task)
 *   GET  /market/tasks, /market/tasks/{taskId}  from memory (NOTIFY-fed)
 *   POST .../claim, .../claim-with-key          claimer passport on the ledger
 *   POST .../deliver, .../deliver-with-key      resultBody <= 4096 bytes or resultIpfs
 *   POST .../cancel, .../increase-reward        DID-signed, poster only
 *   POST .../complete (DID-signed), .../complete-with-key
 *                                               with escrow: posterPrivateKey signs the pending schedules here;
 *                                               without escrow: the directPayment hook of payment.ts
 *   GET  .../escrow-status
 *
 * The same party repeating claim, deliver (same result), complete or cancel after a lost answer gets
 * the step's outcome (200 with the task once it is written, 202 while it runs), never a refusal.
 *
 * Handlers are thin: rules come from domain/market.ts, side effects happen in the taskLifecycle
 * workflow (one per task). A private key from a body signs inside this process only (ScheduleSign
 * bytes), is never logged, stored or handed to a workflow; -with-key variants prove the DID by the key.
 */
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { errorResponses } from '../../schemas/common.js';
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
  taskSchema,
} from '../../schemas/market.js';
import { IDEMPOTENCY_KEY_TTL_MS, postFingerprint } from '../../../domain/idempotency.js';
import { findTask } from '../../../db/queries/tasks.js';
import { claimIdempotencyKey, deleteExpiredIdempotencyKeys, findIdempotencyKey, type IdempotencyRow } from '../../../db/queries/taskIdempotency.js';
import {
  hbarToTinybars,
  isResultBodyTooLarge,
  isResultIpfs,
  postedTask,
  repeatsStep,
  RESULT_BODY_MAX_BYTES,
  type RepeatableStep,
  type StepRequest,
  type TaskRecord,
  type VerifierType,
} from '../../../domain/market.js';
import { parseVerifierConfig } from '../../../domain/verifiers.js';
import { sha256Hex } from '../../../domain/hash.js';
import { requireOwnPrivateKey } from '../../auth/ownKey.js';
import type { PrivateKey } from '../../../ledger/keys.js';
import {
  cancelUpdate,
  claimUpdate,
  completeUpdate,
  deliverUpdate,
  fundUpdate,
  increaseRewardUpdate,
  syncUpdate,
  TASK_WORKFLOW_TYPE,
  taskWorkflowId,
  type TaskLifecycleInput,
} from '../../../workflows/taskTypes.js';
import { startOrAttach } from '../../workflowCalls.js';
import {
  loadTask,
  marketState,
  readTask,
  partyOf,
  pendingSchedules,
  pendingTask,
  refuseEarly,
  requireActivePassport,
  runTaskUpdate,
  signScheduleSigns,
  TaskPending,
  taskResponse,
} from './shared.js';

type PostBody = {
  posterDid: string;
  title: string;
  description?: string;
  priceHbar: number;
  capabilities?: string[];
  verifierType?: VerifierType;
  verifierConfig?: Record<string, unknown>;
  deadline?: string;
  escrow?: boolean;
};

/** What each verifierType's config looks like, for the hint of a refused one. */
const VERIFIER_CONFIG_HINTS: Record<VerifierType, string> = {
  none: 'verifierType none takes no verifierConfig',
  sha256: 'verifierConfig: { "sha256": "<64 hex of the expected resultBody>" }, or leave it out',
  json_schema: 'verifierConfig: { "schema": { "type": "object" } } (at most 16 KB, only local "#/..." $ref)',
  http: 'verifierConfig: { "url": "https://verifier.example/check" }',
};

/**
 * The verifier settings as the verifier will use them (domain/verifiers.ts parseVerifierConfig, the
 * one check: a json_schema is compiled here, so a broken schema or a remote $ref is refused at
 * posting, not at verify time); 400 invalid_request naming the field.
 */
function checkedVerifierConfig(type: VerifierType, config: Record<string, unknown> | undefined): Record<string, unknown> | null {
  const parsed = parseVerifierConfig(type, config);
  if (!parsed.ok) throw new ApiError('invalid_request', parsed.message, { hint: VERIFIER_CONFIG_HINTS[type] });
  return parsed.config;
}

const marketTaskRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const state = marketState(ctx);
  const deployment = ctx.ledger!.deployment;
  app.addHook('onClose', async () => {
    await state.book.close();
  });

  /**
   * Answers a step's outcome, or 202 when it is still running. With `repeat`, a refusal is checked
   * against the written task once more: a repeat of a step that committed meanwhile (the workflow
   * may have ended since the route read the task) answers the task, like a repeat seen at first.
   */
  async function answer(reply: FastifyReply, run: () => Promise<TaskRecord>, repeat?: { op: RepeatableStep; taskId: string; req: StepRequest }) {
    try {
      return taskResponse(await run());
    } catch (err) {
      if (err instanceof TaskPending) return pendingTask(reply, err.taskId);
      if (repeat && err instanceof ApiError) {
        const now = await loadTask(state, repeat.taskId);
        if (repeatsStep(repeat.op, now, repeat.req)) return taskResponse(now);
      }
      throw err;
    }
  }

  /**
   * The same party repeating a step the task has taken (a retry whose answer was lost: claim by its
   * claimer, deliver of the same result, complete or cancel by the poster of a completed or cancelled
   * task) gets the task as written, 200, and nothing runs again. A repeat of the step the workflow is
   * running now passes the checks here (the written task is a step behind) and the workflow answers it.
   */
  function repeatOf(op: RepeatableStep, task: TaskRecord, req: StepRequest) {
    return repeatsStep(op, task, req) ? taskResponse(task) : null;
  }

  // ---------------------------------------------------------------- posting

  function newTask(body: PostBody, taskId: string = uuidv7()): TaskRecord {
    const priceTinybars = hbarToTinybars(body.priceHbar);
    if (priceTinybars === null) throw new ApiError('invalid_request', 'priceHbar must be a positive number of HBAR with at most 8 decimals', { hint: 'e.g. 2.5' });
    const verifierType = body.verifierType ?? 'none';
    const verifierConfig = checkedVerifierConfig(verifierType, body.verifierConfig);
    if (body.deadline && Date.parse(body.deadline) <= Date.now()) {
      throw new ApiError('invalid_request', 'deadline is in the past', { hint: 'Send a future ISO time, or leave it out' });
    }
    return postedTask(
      {
        taskId,
        title: body.title,
        description: body.description ?? '',
        priceHbar: body.priceHbar,
        priceTinybars: priceTinybars.toString(),
        capabilities: [...new Set(body.capabilities ?? [])],
        posterDid: body.posterDid,
        verifierType,
        verifierConfig,
        deadline: body.deadline ? new Date(body.deadline).toISOString() : null,
        feeBps: ctx.config.MARKET_FEE_BPS,
        escrow: body.escrow ?? true,
      },
      new Date().toISOString(),
    );
  }

  /** Starts (or attaches to) the task's workflow and waits for the posting step (the schedule exists afterwards). */
  async function startTask(task: TaskRecord): Promise<TaskRecord> {
    const input: TaskLifecycleInput = { task, timings: state.taskTimings };
    await startOrAttach(ctx, TASK_WORKFLOW_TYPE, taskWorkflowId(task.taskId), input, {
      staticSummary: `${task.title.slice(0, 80)} | ${task.priceHbar} HBAR`,
      staticDetails: [
        `**Task** ${task.taskId}`,
        `**Price** ${task.priceHbar} HBAR (${task.escrow ? 'escrow' : 'direct payment'}, fee ${task.feeBps} bps)`,
        `**Poster** ${task.posterDid}`,
        task.deadline ? `**Deadline** ${task.deadline}` : '',
        `**Verifier** ${task.verifierType}`,
      ]
        .filter(Boolean)
        .join('\n'),
      // a task id is never reused: a retry after the task's workflow closed attaches, never starts it again
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return postedOrRefused(await runTaskUpdate(ctx, task, syncUpdate));
  }

  /** The posting step's outcome: a task whose schedule could not be created ended cancelled at posting (400). */
  function postedOrRefused(posted: TaskRecord): TaskRecord {
    if (posted.status === 'cancelled' && posted.escrow && posted.escrowStatus === 'none' && posted.scheduleId === null) {
      throw new ApiError('invalid_request', 'The escrow schedule could not be created for this poster', { hint: 'The poster account must exist and hold the price' });
    }
    return posted;
  }

  /**
   * The task an Idempotency-Key already stands for (same poster, same fingerprint): as it is now
   * when its posting step is done (the projection has it), else its workflow is started or attached
   * to with the recorded task id, so a post whose answer was lost, or that crashed between
   * recording the key and starting the workflow, is finished by the retry and never posted twice.
   */
  async function replay(route: string, body: PostBody, row: IdempotencyRow, fingerprint: string): Promise<TaskRecord> {
    if (row.request_sha256 !== fingerprint) {
      throw new ApiError('idempotency_key_reused', `Idempotency-Key ${echo(row.idempotency_key)} was already used by ${body.posterDid} for another request (task ${row.task_id})`, {
        hint: `Send a new Idempotency-Key for a new task, or resend the original ${route} body to get task ${row.task_id}`,
      });
    }
    const existing = await findTask(state.book.sql, row.task_id);
    if (existing) return postedOrRefused(existing.record);
    await requireActivePassport(ctx, partyOf(ctx, body.posterDid, 'posterDid'), 'poster');
    return startTask(newTask(body, row.task_id));
  }

  /**
   * Posts a task: checks the body and the poster's passport, records the Idempotency-Key (when sent)
   * before the workflow starts, and waits for the posting step. `route` and the body without any
   * private key are the key's fingerprint.
   */
  async function post(route: string, body: PostBody, idempotencyKey: string | undefined): Promise<TaskRecord> {
    const poster = partyOf(ctx, body.posterDid, 'posterDid');
    const fingerprint = idempotencyKey === undefined ? '' : postFingerprint(route, body as Record<string, unknown>);
    if (idempotencyKey !== undefined) {
      const known = await findIdempotencyKey(state.book.sql, body.posterDid, idempotencyKey, IDEMPOTENCY_KEY_TTL_MS);
      if (known) return replay(route, body, known, fingerprint);
    }
    const task = newTask(body);
    await requireActivePassport(ctx, poster, 'poster');
    if (idempotencyKey !== undefined) {
      const { row, created } = await claimIdempotencyKey(state.book.sql, {
        posterDid: body.posterDid,
        key: idempotencyKey,
        requestSha256: fingerprint,
        taskId: task.taskId,
        ttlMs: IDEMPOTENCY_KEY_TTL_MS,
      });
      // another request with the same key got there first (two concurrent tries): answer its task
      if (!created) return replay(route, body, row, fingerprint);
      sweepExpiredKeys();
    }
    return startTask(task);
  }

  /** Keys older than 24 h are deleted now and then, after a new key is recorded (at most once a minute per process). */
  let lastSweep = 0;
  function sweepExpiredKeys(): void {
    if (Date.now() - lastSweep < 60_000) return;
    lastSweep = Date.now();
    deleteExpiredIdempotencyKeys(state.book.sql, new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS)).catch((err) => app.log.warn({ err }, 'idempotency key sweep failed'));
  }

  const postResponses = { 200: taskSchema, ...errorResponses(202, 400, 401, 403, 409, 500, 502, 503) };

  app.post(
    '/market/tasks',
    {
      schema: {
        tags: ['market'],
        summary: 'Post a task (DID signature headers; the signed DID must be posterDid)',
        description:
          'Creates the task and, unless escrow is false, a scheduled transfer of the price from the poster to the escrow account (escrowStatus scheduled). ' +
          'The poster signs the schedule at completion (posterPrivateKey), or at once with POST /market/tasks/signed (funded).',
        body: taskPostBodySchema,
        headers: taskPostHeadersSchema,
        response: postResponses,
      },
      preHandler: app.signedRequest((request) => (request.body as { posterDid: string }).posterDid),
    },
    async (request, reply) => answer(reply, () => post('/market/tasks', request.body, request.headers['idempotency-key'])),
  );

  app.post(
    '/market/tasks/signed',
    {
      schema: {
        tags: ['market'],
        summary: "Post a task and fund its escrow with the poster's key",
        description:
          'posterPrivateKey signs the escrow schedule (a ScheduleSign paid by the service) inside this process; it is never stored, logged or returned. ' +
          'The schedule executes and the price sits in the escrow account: escrowStatus funded.',
        body: taskPostSignedBodySchema,
        headers: taskPostHeadersSchema,
        response: postResponses,
      },
    },
    async (request, reply) => {
      const { posterPrivateKey, ...body } = request.body;
      const poster = partyOf(ctx, body.posterDid, 'posterDid');
      const key = await requireOwnPrivateKey(ctx.ledger!.keys, poster, posterPrivateKey, 'posterPrivateKey', 'poster');
      let task: TaskRecord;
      try {
        task = await post('/market/tasks/signed', body, request.headers['idempotency-key']);
      } catch (err) {
        if (err instanceof TaskPending) return pendingTask(reply, err.taskId);
        throw err;
      }
      if (!task.escrow || task.escrowStatus !== 'scheduled') return taskResponse(task);
      return answer(reply, async () =>
        runTaskUpdate(ctx, task, fundUpdate, { posterDid: task.posterDid, scheduleSigns: await signScheduleSigns(ctx, pendingSchedules(task), key) }),
      );
    },
  );

  // ---------------------------------------------------------------- reads

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
    async (request) => {
      const { limit, offset, ...filter } = request.query;
      await state.book.ready();
      const { tasks, total } = state.book.page(filter, limit, offset);
      return { tasks: tasks.map(taskResponse), count: tasks.length, total, limit, offset };
    },
  );

  app.get(
    '/market/tasks/:taskId',
    {
      schema: { tags: ['market'], summary: 'One task', params: taskIdParams, response: { 200: taskSchema, ...errorResponses(404, 503) } },
    },
    async (request) => taskResponse(await readTask(state, request.params.taskId)),
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
    async (request) => {
      const t = await readTask(state, request.params.taskId);
      return {
        taskId: t.taskId,
        scheduleId: t.scheduleId,
        topUpScheduleId: t.topUpScheduleId,
        escrowStatus: t.escrowStatus,
        verificationAttempts: t.verificationAttempts,
        verifierType: t.verifierType,
        priceHbar: t.priceHbar,
        escrowAccountId: deployment.escrow,
        _links: {
          task: { href: `/market/tasks/${t.taskId}` },
          ...(t.scheduleId ? { schedule: { href: `${deployment.mirrorUrl.replace(/\/$/, '')}/api/v1/schedules/${t.scheduleId}` } } : {}),
        },
      };
    },
  );

  // ---------------------------------------------------------------- claim

  const stepResponses = (...extra: number[]) => ({ 200: taskSchema, ...errorResponses(202, 400, 401, 403, 404, 500, 502, 503, ...extra) });

  async function claim(reply: FastifyReply, taskId: string, claimerDid: string) {
    const claimer = partyOf(ctx, claimerDid, 'claimerDid');
    const task = await loadTask(state, taskId);
    const req = { callerDid: claimerDid };
    const repeat = repeatOf('claim', task, req);
    if (repeat) return repeat;
    refuseEarly('claim', task, claimerDid);
    await requireActivePassport(ctx, claimer, 'claimer');
    return answer(reply, () => runTaskUpdate(ctx, task, claimUpdate, { claimerDid }), { op: 'claim', taskId: task.taskId, req });
  }

  app.post(
    '/market/tasks/:taskId/claim',
    {
      schema: { tags: ['market'], summary: 'Claim a posted task (DID signature headers; the signed DID must be claimerDid)', params: taskIdParams, body: claimBodySchema, response: stepResponses(409) },
      preHandler: app.signedRequest((request) => (request.body as { claimerDid: string }).claimerDid),
    },
    async (request, reply) => claim(reply, request.params.taskId, request.body.claimerDid),
  );

  app.post(
    '/market/tasks/:taskId/claim-with-key',
    {
      schema: { tags: ['market'], summary: "Claim a posted task, proving the claimer by the account's key", params: taskIdParams, body: claimWithKeyBodySchema, response: stepResponses(409) },
    },
    async (request, reply) => {
      await requireOwnPrivateKey(ctx.ledger!.keys, partyOf(ctx, request.body.claimerDid, 'claimerDid'), request.body.claimerPrivateKey, 'claimerPrivateKey', 'claimer');
      return claim(reply, request.params.taskId, request.body.claimerDid);
    },
  );

  // ---------------------------------------------------------------- deliver

  async function deliver(reply: FastifyReply, taskId: string, body: { claimerDid: string; resultBody?: string; resultIpfs?: string }) {
    partyOf(ctx, body.claimerDid, 'claimerDid');
    if (body.resultBody === undefined && body.resultIpfs === undefined) {
      throw new ApiError('invalid_request', 'A result is missing: send resultBody or resultIpfs', { hint: `resultBody up to ${RESULT_BODY_MAX_BYTES} bytes, or resultIpfs` });
    }
    if (body.resultBody !== undefined && isResultBodyTooLarge(body.resultBody)) {
      throw new ApiError('invalid_request', `resultBody is over ${RESULT_BODY_MAX_BYTES} bytes`, { hint: 'Store larger results elsewhere and send resultIpfs (ipfs://<CID>)' });
    }
    if (body.resultIpfs !== undefined && !isResultIpfs(body.resultIpfs)) {
      throw new ApiError('invalid_request', 'resultIpfs is not an IPFS reference', { hint: 'Use ipfs://<CID>[/path]' });
    }
    const task = await loadTask(state, taskId);
    const req = { callerDid: body.claimerDid, resultBody: body.resultBody, resultIpfs: body.resultIpfs };
    const repeat = repeatOf('deliver', task, req);
    if (repeat) return repeat;
    refuseEarly('deliver', task, body.claimerDid);
    const args = {
      claimerDid: body.claimerDid,
      ...(body.resultBody !== undefined ? { resultBody: body.resultBody, resultSha256: sha256Hex(body.resultBody) } : {}),
      ...(body.resultIpfs !== undefined ? { resultIpfs: body.resultIpfs } : {}),
    };
    return answer(reply, () => runTaskUpdate(ctx, task, deliverUpdate, args), { op: 'deliver', taskId: task.taskId, req });
  }

  app.post(
    '/market/tasks/:taskId/deliver',
    {
      schema: {
        tags: ['market'],
        summary: 'Deliver a result (claimer only; DID signature headers): resultBody at most 4096 bytes, or resultIpfs',
        params: taskIdParams,
        body: deliverBodySchema,
        response: stepResponses(409),
      },
      preHandler: app.signedRequest((request) => (request.body as { claimerDid: string }).claimerDid),
    },
    async (request, reply) => deliver(reply, request.params.taskId, request.body),
  );

  app.post(
    '/market/tasks/:taskId/deliver-with-key',
    {
      schema: { tags: ['market'], summary: "Deliver a result, proving the claimer by the account's key", params: taskIdParams, body: deliverWithKeyBodySchema, response: stepResponses(409) },
    },
    async (request, reply) => {
      const { claimerPrivateKey, ...body } = request.body;
      await requireOwnPrivateKey(ctx.ledger!.keys, partyOf(ctx, body.claimerDid, 'claimerDid'), claimerPrivateKey, 'claimerPrivateKey', 'claimer');
      return deliver(reply, request.params.taskId, body);
    },
  );

  // ---------------------------------------------------------------- poster steps

  app.post(
    '/market/tasks/:taskId/cancel',
    {
      schema: {
        tags: ['market'],
        summary: 'Cancel a task (poster; DID signature headers): the schedule is deleted (cancelled) or the escrow refunded (refunded)',
        params: taskIdParams,
        body: posterBodySchema,
        response: stepResponses(),
      },
      preHandler: app.signedRequest((request) => (request.body as { posterDid: string }).posterDid),
    },
    async (request, reply) => {
      const task = await loadTask(state, request.params.taskId);
      const req = { callerDid: request.body.posterDid };
      const repeat = repeatOf('cancel', task, req);
      if (repeat) return repeat;
      refuseEarly('cancel', task, request.body.posterDid);
      return answer(reply, () => runTaskUpdate(ctx, task, cancelUpdate, { posterDid: request.body.posterDid, reason: request.body.reason }), {
        op: 'cancel',
        taskId: task.taskId,
        req,
      });
    },
  );

  app.post(
    '/market/tasks/:taskId/increase-reward',
    {
      schema: {
        tags: ['market'],
        summary: 'Raise the price (poster; posted or claimed): a scheduled escrow is replaced, a funded one gets a top-up schedule',
        params: taskIdParams,
        body: increaseRewardBodySchema,
        response: stepResponses(),
      },
      preHandler: app.signedRequest((request) => (request.body as { posterDid: string }).posterDid),
    },
    async (request, reply) => {
      const task = await loadTask(state, request.params.taskId);
      refuseEarly('increaseReward', task, request.body.posterDid);
      return answer(reply, () => runTaskUpdate(ctx, task, increaseRewardUpdate, request.body));
    },
  );

  // ---------------------------------------------------------------- complete

  async function complete(reply: FastifyReply, taskId: string, body: { posterDid: string; posterPrivateKey?: string; txBytes?: string; publicKey?: string; signature?: string }) {
    const poster = partyOf(ctx, body.posterDid, 'posterDid');
    const task = await loadTask(state, taskId);
    const req = { callerDid: body.posterDid };
    const repeat = repeatOf('complete', task, req);
    if (repeat) return repeat;
    refuseEarly('complete', task, body.posterDid);
    const again = { op: 'complete' as const, taskId: task.taskId, req };
    if (task.escrow) {
      if (!body.posterPrivateKey) {
        throw new ApiError('invalid_request', 'This task is paid from escrow: posterPrivateKey is required (a signature-only transfer cannot release it)', {
          hint: 'Send posterPrivateKey, or use POST /market/tasks/{taskId}/complete-with-key',
        });
      }
      if (body.txBytes || body.signature || body.publicKey) {
        throw new ApiError('invalid_request', 'This task is paid from escrow: txBytes, publicKey and signature are not accepted', { hint: 'Send posterDid and posterPrivateKey only' });
      }
      const key: PrivateKey = await requireOwnPrivateKey(ctx.ledger!.keys, poster, body.posterPrivateKey, 'posterPrivateKey', 'poster');
      const scheduleSigns = await signScheduleSigns(ctx, pendingSchedules(task), key);
      return answer(reply, () => runTaskUpdate(ctx, task, completeUpdate, { posterDid: body.posterDid, scheduleSigns }), again);
    }
    if (!state.directPayment) {
      throw new ApiError('invalid_request', 'Completing a task without escrow is not available on this server', { hint: 'Post tasks with escrow' });
    }
    const directTransferBytes = await state.directPayment({ task, body });
    return answer(reply, () => runTaskUpdate(ctx, task, completeUpdate, { posterDid: body.posterDid, directTransferBytes }), again);
  }

  app.post(
    '/market/tasks/:taskId/complete',
    {
      schema: {
        tags: ['market'],
        summary: 'Complete a delivered task and pay the claimer (poster; DID signature headers)',
        description:
          'With escrow (scheduleId present): posterPrivateKey is required, signs the pending escrow schedule here (memory only), then the escrow ' +
          'account pays the claimer the price less MARKET_FEE_BPS and the treasury the fee (escrowStatus released, paymentTxId). ' +
          'Without escrow: txBytes + publicKey + signature of the transfer from POST prepare-payment, or posterPrivateKey.',
        params: taskIdParams,
        body: completeBodySchema,
        response: stepResponses(),
      },
      preHandler: app.signedRequest((request) => (request.body as { posterDid: string }).posterDid),
    },
    async (request, reply) => complete(reply, request.params.taskId, request.body),
  );

  app.post(
    '/market/tasks/:taskId/complete-with-key',
    {
      schema: {
        tags: ['market'],
        summary: "Complete a delivered task with the poster's key: signs, submits, pays; returns paymentTxId",
        params: taskIdParams,
        body: completeWithKeyBodySchema,
        response: stepResponses(),
      },
    },
    async (request, reply) => {
      await requireOwnPrivateKey(ctx.ledger!.keys, partyOf(ctx, request.body.posterDid, 'posterDid'), request.body.posterPrivateKey, 'posterPrivateKey', 'poster');
      return complete(reply, request.params.taskId, request.body);
    },
  );

};

export default marketTaskRoutes;
