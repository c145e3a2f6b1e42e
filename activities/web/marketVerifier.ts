/**
 * The runTaskVerifier activity (workflows/contracts/taskLifecycle.ts): runs a delivered task's verifier and answers
 * { passed, reasons }. It never completes a task or moves money; the workflow counts the attempts.
 *
 * none and sha256 are pure (domain/verifiers.ts); json_schema validates in a worker thread with a
 * deadline (./jsonSchemaSandbox.ts: the poster's patterns run on the claimer's data). http POSTs
 * { taskId, attempt, resultBody, resultIpfs, resultSha256 } as JSON to the poster's verifier URL
 * through THE SSRF-guarded fetcher (net/safeFetch: public addresses only unless TRUST_ALLOW_PRIVATE,
 * 5 s, 64 KB answer) and reads JSON { passed, reasons? }. A verifier that cannot be reached, refuses
 * or answers garbage is a failed verification with the reason, not an activity failure: retrying
 * would only POST the same result to the poster's server again.
 */
import { safeFetch, SafeFetchError } from '../../net/safeFetch.js';
import { jsonSchemaInputs, parseHttpVerifierAnswer, runLocalVerifier, type VerifierOutcome } from '../../domain/verifiers.js';
import { validateInThread } from './jsonSchemaSandbox.js';
import type { TaskVerifierActivities, TaskVerifierInput, TaskVerifierResult } from '../../workflows/contracts/taskLifecycle.js';

export interface TaskVerifierDeps {
  /** TRUST_ALLOW_PRIVATE (tests only): lift the address rule of the SSRF guard */
  allowPrivate: boolean;
  /** deadline of the http verifier's answer (default 5 s) */
  timeoutMs?: number;
  /** deadline of a json_schema validation, run in a worker thread (default 2 s) */
  jsonSchemaDeadlineMs?: number;
}

export async function runHttpVerifier(url: unknown, input: TaskVerifierInput, deps: TaskVerifierDeps): Promise<VerifierOutcome> {
  if (typeof url !== 'string') return { passed: false, reasons: ['verifierConfig.url is missing'] };
  const body = JSON.stringify({
    taskId: input.taskId,
    attempt: input.attempt,
    resultBody: input.resultBody,
    resultIpfs: input.resultIpfs,
    resultSha256: input.resultSha256,
  });
  try {
    const res = await safeFetch(url, { post: { body }, allowPrivate: deps.allowPrivate, timeoutMs: deps.timeoutMs ?? 5_000, maxBytes: 64 * 1024 });
    return parseHttpVerifierAnswer(res.status, res.body);
  } catch (err) {
    if (err instanceof SafeFetchError) {
      const why = err.reason === 'address_refused' ? 'the verifier URL resolves to a non-public address' : err.message;
      return { passed: false, reasons: [`the verifier could not be reached (${err.reason}): ${why}`], inconclusive: true };
    }
    throw err;
  }
}

export function createMarketVerifierActivities(deps: TaskVerifierDeps): TaskVerifierActivities {
  return {
    async runTaskVerifier(input: TaskVerifierInput): Promise<TaskVerifierResult> {
      const subject = { resultBody: input.resultBody, resultIpfs: input.resultIpfs, resultSha256: input.resultSha256 };
      if (input.verifierType === 'http') return runHttpVerifier(input.verifierConfig?.url, input, deps);
      if (input.verifierType === 'json_schema') {
        // the poster's patterns run on the claimer's data: in a thread with a deadline, not on this event loop
        const inputs = jsonSchemaInputs(input.verifierConfig, subject);
        if ('outcome' in inputs) return inputs.outcome;
        return validateInThread(inputs, deps.jsonSchemaDeadlineMs);
      }
      return runLocalVerifier(input.verifierType, input.verifierConfig, subject);
    },
  };
}
