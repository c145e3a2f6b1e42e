/**
 * Verify (SPEC 4.4a; DESIGN.md 6 "Verification"): the taskLifecycle workflow runs the poster's
 * verifier on the delivery (activities/web/marketVerifier.ts runTaskVerifier), counts the runs and
 * never completes the task or pays.
 *
 * Under the escrow promises verify is open to anyone, so it takes no step mutex and never queues in
 * front of the parties' steps. The delivery's outcome is kept in the task (task.verification) and
 * answered again; the verifier runs again only after an inconclusive outcome, at most verifyRunsMax
 * times per delivery and verifyRetryMs apart. Concurrent verifies share one run. Only an outcome that
 * differs from the kept one is written to the topic (task.verified); the projection keeps it either
 * way, so the API answers later verifies from memory. Before the promises (histories recorded then)
 * each verify ran the verifier under the mutex and wrote task.verified.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { DEFAULT_VERIFY_RETRY_S, DEFAULT_VERIFY_RUNS_MAX, refusalOf, verifierRunDue, type TaskVerification } from '../../domain/market.js';
import type { TaskTimings, VerifyResult } from '../contracts/taskLifecycle.js';
import { refuse } from './refusals.js';
import { nowIso, type Commit, type TaskActivities, type TaskRun } from './run.js';
import type { StepMutex } from './stepMutex.js';

export function verification(run: TaskRun, verifier: TaskActivities['verifier'], commit: Commit, exclusive: StepMutex['exclusive'], t: TaskTimings) {
  const task = run.task;
  const verifyRunsMax = t.verifyRunsMax ?? DEFAULT_VERIFY_RUNS_MAX;
  const verifyRetryMs = t.verifyRetryMs ?? DEFAULT_VERIFY_RETRY_S * 1000;
  const check = () => refuse(refusalOf('verify', task));

  /** what the verifier activity is given: the delivery and the attempt number */
  const verifierInput = (attempt: number) => ({
    taskId: task.taskId,
    verifierType: task.verifierType,
    verifierConfig: task.verifierConfig,
    resultBody: task.resultBody,
    resultIpfs: task.resultIpfs,
    resultSha256: task.resultSha256,
    attempt,
  });

  /** runs the delivery's verifier once; a failure of the activity itself is an inconclusive outcome */
  async function runVerifier(attempt: number): Promise<{ passed: boolean; reasons: string[]; inconclusive?: boolean }> {
    try {
      return await verifier.runTaskVerifier(verifierInput(attempt));
    } catch (err) {
      const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.message : 'the verifier failed';
      return { passed: false, reasons: [`verifier error: ${cause}`], inconclusive: true };
    }
  }

  let verifying: Promise<VerifyResult> | null = null;
  const verifyAnswer = (v: TaskVerification, reused: boolean): VerifyResult => ({
    passed: v.passed,
    reasons: v.reasons,
    verificationAttempts: task.verificationAttempts,
    task: { ...task },
    verifiedAt: v.at,
    reused,
  });
  async function verifyDelivery(): Promise<VerifyResult> {
    const before = task.verification ?? null;
    task.verificationAttempts++;
    const r = await runVerifier(task.verificationAttempts);
    const v: TaskVerification = { passed: r.passed, reasons: r.reasons, at: nowIso(), runs: (before?.runs ?? 0) + 1, ...(r.inconclusive ? { inconclusive: true } : {}) };
    task.verification = v;
    if (task.status === 'delivered') {
      const changed = before === null || before.passed !== v.passed;
      await commit(changed ? 'task.verified' : null, changed ? { passed: v.passed } : {});
    }
    return verifyAnswer(v, false);
  }
  /** verify under the escrow promises: the kept outcome, the run in progress, or a new run */
  async function verifyOnce(): Promise<VerifyResult> {
    check();
    if (verifying) return verifying;
    const kept = task.verification;
    if (kept && !verifierRunDue(kept, Date.now(), verifyRunsMax, verifyRetryMs)) return Promise.resolve(verifyAnswer(kept, true));
    verifying = verifyDelivery().finally(() => {
      verifying = null;
    });
    return verifying;
  }

  /** verify before the escrow promises: every call runs the verifier, under the mutex */
  const verifyEach = () =>
    exclusive(async (): Promise<VerifyResult> => {
      check();
      task.verificationAttempts++;
      let result;
      try {
        result = await verifier.runTaskVerifier(verifierInput(task.verificationAttempts));
      } catch (err) {
        const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.message : 'the verifier failed';
        result = { passed: false, reasons: [`verifier error: ${cause}`] };
      }
      await commit('task.verified', { passed: result.passed });
      return { passed: result.passed, reasons: result.reasons, verificationAttempts: task.verificationAttempts, task: { ...task } };
    });

  return { verifyOnce, verifyEach, check };
}
