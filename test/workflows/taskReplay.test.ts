// Determinism guard of the taskLifecycle workflow: its committed histories (recorded by
// test/e2e/market.test.ts through recordFixture: a completed escrow task, a funded task cancelled
// and refunded, a funded task cancelled at its deadline; and, recorded by
// test/e2e/marketMoneyIntegrity.test.ts, a raised price whose top-up expired: completion answered 409,
// made a new top-up and paid once it was signed; and by test/cluster/deploy.test.ts, the rolling
// deploy from commit ebf7c5c) replay against the current workflow code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
// the escrow promises (patched 'task-escrow-promises', recorded by test/e2e/marketPromises.test.ts): a
// delivered escrow released to the claimer after the review window, a claim lapsed after the claim
// window, an unfunded task cancelled at the end of the funding window, verifies reusing the outcome; (issue 19 item 4) a completion refused while a top-up is unfunded
const histories = [
  'taskLifecycle-completed',
  'taskLifecycle-refunded',
  'taskLifecycle-deadline',
  'taskLifecycle-review-released',
  'taskLifecycle-claim-lapsed',
  'taskLifecycle-funding-expired',
  'taskLifecycle-verify-reused',
  'taskLifecycle-underfunded',
  // (issue 26 item 8, patched 'task-unfunded-schedules-lapse', recorded by test/e2e/market.test.ts) an unsigned
  // schedule lapsed at its expiry without a renewal, then the reward was raised (a fresh schedule) and the task
  // cancelled; recorded since the binding, it replays under the workflow id its start names (replayHistoryFile)
  'taskLifecycle-unfunded-lapsed',
  // the rolling deploy (test/cluster/deploy.test.ts): workflows started by the code of commit ebf7c5c,
  // finished by later code, one of them through the REPEATED_STEP_PATCH branch mid-flight; recorded again
  // after the escrow patches: the same crossing, completed through ESCROW_PAYS_ESCROWED_PATCH (its marker
  // recorded mid-flight) and without the escrow promises (read at the start, which the old code made)
  'taskLifecycle-rolling-deploy-repeated-claim',
  'taskLifecycle-rolling-deploy-overlap',
  'taskLifecycle-rolling-deploy-pays-escrowed',
];

describe('replay of the recorded taskLifecycle histories', () => {
  for (const name of histories) {
    const file = path.join(here, '..', 'fixtures', 'histories', `${name}.history.bin`);
    it(`${name}: recorded and replays against workflows/index.ts`, async () => {
      expect(fs.existsSync(file)).toBe(true);
      await expect(replayHistoryFile(file, workflowsPath, 'taskLifecycle')).resolves.toBeUndefined();
    });
  }
});
