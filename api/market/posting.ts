/**
 * Posting a marketplace task (SPEC 4.4a POST /market/tasks and /market/tasks/signed; DESIGN.md
 * sections 6 "Marketplace escrow" and 10; issue 20 posting caps):
 *
 *   postTask(...)        checks the body and the poster's passport, records the Idempotency-Key (when
 *                        sent) before the workflow starts, reserves the posting against the caps,
 *                        starts the task's taskLifecycle workflow and waits for its posting step
 *   postFundedTask(...)  the same, then the poster's key (checked by the route) signs the escrow
 *                        schedule here and the workflow's fund Update submits it (funded)
 *
 * A retry with the same Idempotency-Key answers the task the key stands for (finishing its posting
 * when the first try crashed before the workflow started); it never posts twice.
 */
import { v7 as uuidv7 } from 'uuid';
import type { PrivateKey } from '@hashgraph/sdk';
import { ApiError, echo } from '../errors.js';
import { startOrAttach } from '../workflowCalls.js';
import { IDEMPOTENCY_KEY_TTL_MS, postFingerprint } from '../../domain/idempotency.js';
import { hbarToTinybars, pendingScheduleIds, postedTask, postingRefusal, type TaskRecord, type VerifierType } from '../../domain/market.js';
import { parseVerifierConfig } from '../../domain/verifiers.js';
import { findTask } from '../../db/queries/marketTasks.js';
import { recordStepAuthorisation } from '../../db/queries/stepAuthorisations.js';
import { stepArgumentSha256 } from '../../domain/stepAuthorisation.js';
import { bound } from '../../temporal/workflows.js';
import { reservePosting, sweepPostings } from '../../db/queries/marketPostings.js';
import { claimIdempotencyKey, deleteExpiredIdempotencyKeys, findIdempotencyKey, type IdempotencyRow } from '../../db/queries/marketIdempotency.js';
import { fundUpdate, syncUpdate, taskLifecycleContract, taskWorkflowId, type TaskLifecycleInput } from '../../workflows/contracts/taskLifecycle.js';
import { partyOf, requireMarketPassport } from './parties.js';
import { ledgerFacts, signScheduleSigns } from './signing.js';
import { refuse, runTaskUpdate } from './updates.js';
import type { Market } from './state.js';

export type PostRoute = '/market/tasks' | '/market/tasks/signed';

export type PostBody = {
  posterDid: string;
  title: string;
  description?: string;
  priceHbar: number;
  capabilities?: string[];
  verifierType?: VerifierType;
  verifierConfig?: Record<string, unknown>;
  deadline?: string;
  escrow?: boolean;
  claimWindowHours?: number;
  reviewWindowHours?: number;
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

function newTask(market: Market, body: PostBody, taskId: string = uuidv7()): TaskRecord {
  const config = market.ctx.config;
  const priceTinybars = hbarToTinybars(body.priceHbar);
  if (priceTinybars === null) throw new ApiError('invalid_request', 'priceHbar must be a positive number of HBAR with at most 8 decimals', { hint: 'e.g. 2.5' });
  const verifierType = body.verifierType ?? 'none';
  const verifierConfig = checkedVerifierConfig(verifierType, body.verifierConfig);
  const escrow = body.escrow ?? true;
  // the escrow promises (seconds): the poster's choice in hours, else the configured defaults (tests: market.windows)
  const hours = (h: number | undefined) => (h === undefined ? undefined : Math.round(h * 3600));
  const windows = market.windows;
  const claimWindowSeconds = windows?.claimSeconds ?? hours(body.claimWindowHours) ?? config.MARKET_CLAIM_WINDOW_S;
  const reviewWindowSeconds = escrow ? (windows?.reviewSeconds ?? hours(body.reviewWindowHours) ?? config.MARKET_REVIEW_WINDOW_S) : null;
  const fundingWindowSeconds = escrow ? (windows?.fundingSeconds ?? config.MARKET_FUNDING_WINDOW_S) : null;
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
      feeBps: config.MARKET_FEE_BPS,
      escrow,
      claimWindowSeconds,
      reviewWindowSeconds,
      fundingWindowSeconds,
    },
    new Date().toISOString(),
  );
}

/** Starts (or attaches to) the task's workflow and waits for the posting step (the schedule exists afterwards). */
async function startTask(market: Market, task: TaskRecord): Promise<TaskRecord> {
  const config = market.ctx.config;
  // the verify bounds come from the configuration (tests may shorten any timing)
  const timings = {
    verifyRunsMax: config.MARKET_VERIFY_RUNS_MAX,
    verifyRetryMs: config.MARKET_VERIFY_RETRY_S * 1000,
    rewardIncreasesMax: config.MARKET_REWARD_INCREASES_MAX,
    ...market.taskTimings,
  };
  const workflowId = taskWorkflowId(task.taskId);
  // the start is bound to its workflow, and authorised by a one-time row the workflow uses before it posts (issue 26)
  const input = bound<TaskLifecycleInput>({ task, timings, ledger: ledgerFacts(market) }, workflowId, taskLifecycleContract.type);
  await recordStepAuthorisation(market.sql, { nonce: input.binding.nonce, workflowId, message: taskLifecycleContract.type, callerDid: task.posterDid, argsSha256: stepArgumentSha256(input) });
  await startOrAttach(market.ctx, taskLifecycleContract, workflowId, input, {
    staticSummary: `${task.title.slice(0, 80)} | ${task.priceHbar} HBAR`,
    staticDetails: [
      `**Task** ${task.taskId}`,
      `**Price** ${task.priceHbar} HBAR (${task.escrow ? 'escrow' : 'direct payment'}, fee ${task.feeBps} bps)`,
      `**Poster** ${task.posterDid}`,
      task.deadline ? `**Deadline** ${task.deadline}` : '',
      `**Verifier** ${task.verifierType}`,
      `**Windows** claim ${task.claimWindowSeconds} s${task.escrow ? `, review ${task.reviewWindowSeconds} s, funding ${task.fundingWindowSeconds} s` : ''}`,
    ]
      .filter(Boolean)
      .join('\n'),
    // a task id is never reused: a retry after the task's workflow closed attaches, never starts it again
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  });
  return postedOrRefused(await runTaskUpdate(market, task, syncUpdate));
}

/** The posting step's outcome: a task whose schedule could not be created ended cancelled at posting (400). */
function postedOrRefused(posted: TaskRecord): TaskRecord {
  refuse(postingRefusal(posted));
  return posted;
}

/**
 * The task an Idempotency-Key already stands for (same poster, same fingerprint): as it is now
 * when its posting step is done (the projection has it), else its workflow is started or attached
 * to with the recorded task id, so a post whose answer was lost, or that crashed between
 * recording the key and starting the workflow, is finished by the retry and never posted twice.
 */
async function replay(market: Market, route: PostRoute, body: PostBody, row: IdempotencyRow, fingerprint: string): Promise<TaskRecord> {
  if (row.request_sha256 !== fingerprint) {
    throw new ApiError('idempotency_key_reused', `Idempotency-Key ${echo(row.idempotency_key)} was already used by ${body.posterDid} for another request (task ${row.task_id})`, {
      hint: `Send a new Idempotency-Key for a new task, or resend the original ${route} body to get task ${row.task_id}`,
    });
  }
  const existing = await findTask(market.sql, row.task_id);
  if (existing) return postedOrRefused(existing.record);
  await requireMarketPassport(market, partyOf(market, body.posterDid, 'posterDid'), 'poster');
  const task = newTask(market, body, row.task_id);
  if (fundsAtOnce(route, task)) await requireBalanceFor(market, task);
  await reservePostingOf(market, task, fundsAtOnce(route, task));
  return startTask(market, task);
}

/**
 * Posts a task: checks the body and the poster's passport, records the Idempotency-Key (when sent)
 * before the workflow starts, and waits for the posting step. `route` and the body without any
 * private key are the key's fingerprint.
 */
export async function postTask(market: Market, route: PostRoute, body: PostBody, idempotencyKey: string | undefined): Promise<TaskRecord> {
  const poster = partyOf(market, body.posterDid, 'posterDid');
  const fingerprint = idempotencyKey === undefined ? '' : postFingerprint(route, body as Record<string, unknown>);
  if (idempotencyKey !== undefined) {
    const known = await findIdempotencyKey(market.sql, body.posterDid, idempotencyKey, IDEMPOTENCY_KEY_TTL_MS);
    if (known) return replay(market, route, body, known, fingerprint);
  }
  const task = newTask(market, body);
  await requireMarketPassport(market, poster, 'poster');
  // (a retry of a recorded post is answered above, before its poster's balance moved on)
  if (fundsAtOnce(route, task)) await requireBalanceFor(market, task);
  if (idempotencyKey !== undefined) {
    const { row, created } = await claimIdempotencyKey(market.sql, {
      posterDid: body.posterDid,
      key: idempotencyKey,
      requestSha256: fingerprint,
      taskId: task.taskId,
      ttlMs: IDEMPOTENCY_KEY_TTL_MS,
    });
    // another request with the same key got there first (two concurrent tries): answer its task
    if (!created) return replay(market, route, body, row, fingerprint);
    sweepExpiredKeys(market);
  }
  await reservePostingOf(market, task, fundsAtOnce(route, task));
  return startTask(market, task);
}

/**
 * POST /market/tasks/signed: posts the task, then funds its escrow at once with the poster's key
 * (already checked to be the poster's): the pending schedule is signed here and the fund Update
 * submits the signature. A task without escrow, or one whose escrow is no longer scheduled, is
 * answered as posted.
 */
export async function postFundedTask(market: Market, body: PostBody, posterKey: PrivateKey, idempotencyKey: string | undefined): Promise<TaskRecord> {
  const task = await postTask(market, '/market/tasks/signed', body, idempotencyKey);
  if (!task.escrow || task.escrowStatus !== 'scheduled') return task;
  return runTaskUpdate(market, task, fundUpdate, { posterDid: task.posterDid, scheduleSigns: await signScheduleSigns(market, pendingScheduleIds(task), posterKey) });
}

/**
 * The posting caps (db/queries/marketPostings.ts), counted in PostgreSQL so every instance agrees:
 * MARKET_POSTS_PER_DAY per poster per rolling 24 h, MARKET_UNFUNDED_TASKS_MAX open unfunded tasks
 * per poster. 429 with the rate-limit headers (X-RateLimit-Reset: when the count can fall).
 */
async function reservePostingOf(market: Market, task: TaskRecord, funded: boolean): Promise<void> {
  const c = market.ctx.config;
  const now = new Date();
  const outcome = await reservePosting(market.sql, {
    taskId: task.taskId,
    posterDid: task.posterDid,
    now,
    limits: { unfundedMax: c.MARKET_UNFUNDED_TASKS_MAX, dailyMax: c.MARKET_POSTS_PER_DAY, fundingWindowMs: c.MARKET_FUNDING_WINDOW_S * 1000 },
    funded,
  });
  sweepPostingRows(market, now);
  if (outcome.ok) return;
  const reset = Math.ceil(outcome.resetAt.getTime() / 1000);
  const retryAfter = String(Math.max(1, reset - Math.floor(now.getTime() / 1000)));
  if (outcome.refused === 'daily') {
    throw new ApiError('market_post_quota_exceeded', `${task.posterDid} posted ${c.MARKET_POSTS_PER_DAY} tasks in the last 24 h, the most allowed`, {
      hint: `Retry after ${outcome.resetAt.toISOString()}`,
      headers: { 'x-ratelimit-limit': String(c.MARKET_POSTS_PER_DAY), 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset), 'retry-after': retryAfter },
    });
  }
  throw new ApiError('market_unfunded_limit', `${task.posterDid} has ${outcome.open} open unfunded tasks; at most ${c.MARKET_UNFUNDED_TASKS_MAX} are allowed`, {
    hint:
      `Fund one (POST /market/tasks/signed funds the escrow at posting; a scheduled escrow is funded by the poster's ScheduleSign), complete or cancel one ` +
      `(GET /market/tasks?posterDid=${encodeURIComponent(task.posterDid)}&status=posted lists them), or wait until ${outcome.resetAt.toISOString()} when the oldest unfunded one ends`,
    headers: { 'x-ratelimit-limit': String(c.MARKET_UNFUNDED_TASKS_MAX), 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset), 'retry-after': retryAfter },
  });
}

/**
 * An escrow task posted with the poster's key is funded in the same request (its balance was
 * checked first): it does not count against the unfunded cap while its funding runs. If the funding
 * fails after all, the task is an unfunded one the next posts count.
 */
function fundsAtOnce(route: PostRoute, task: TaskRecord): boolean {
  return route === '/market/tasks/signed' && task.escrow;
}

/** Postings older than a day are deleted now and then (at most once a minute per process). */
function sweepPostingRows(market: Market, now: Date): void {
  if (now.getTime() - market.sweptAt.postings < 60_000) return;
  market.sweptAt.postings = now.getTime();
  sweepPostings(market.sql, now).catch((err) => market.log.warn({ err }, 'task postings sweep failed'));
}

/** Keys older than 24 h are deleted now and then, after a new key is recorded (at most once a minute per process). */
function sweepExpiredKeys(market: Market): void {
  if (Date.now() - market.sweptAt.idempotencyKeys < 60_000) return;
  market.sweptAt.idempotencyKeys = Date.now();
  deleteExpiredIdempotencyKeys(market.sql, new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS)).catch((err) => market.log.warn({ err }, 'idempotency key sweep failed'));
}

/** 400 unless the poster's account holds the price (the mirror's balance): an escrow funded at posting must not fail for want of it. */
async function requireBalanceFor(market: Market, task: TaskRecord): Promise<void> {
  const accountId = partyOf(market, task.posterDid, 'posterDid').accountId;
  const price = BigInt(task.priceTinybars);
  let balance: bigint | null;
  try {
    balance = await market.ledger.mirror.getHbarBalance(accountId);
  } catch {
    throw new ApiError('service_unavailable', 'The ledger mirror is unavailable, so the poster balance cannot be checked', { hint: 'Retry after 30 seconds' });
  }
  if (balance === null || balance < price) {
    throw new ApiError('invalid_request', `The poster account ${accountId} holds less than the price (${task.priceHbar} HBAR)`, {
      hint: 'Fund the poster account first, or post with POST /market/tasks and fund the escrow later',
    });
  }
}
