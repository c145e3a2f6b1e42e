// Determinism guard of the escrowReconciler workflow (issue 26 item 4): its committed history
// (recorded by test/e2e/marketEscrowReconciler.test.ts through recordFixture: a pass that refunded a
// task whose workflow had been terminated) replays against the current workflow code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');

describe('replay of the recorded escrowReconciler history', () => {
  const file = path.join(here, '..', 'fixtures', 'histories', 'escrowReconciler.history.bin');
  it('escrowReconciler: recorded and replays against workflows/index.ts', async () => {
    expect(fs.existsSync(file)).toBe(true);
    await expect(replayHistoryFile(file, workflowsPath, 'escrowReconciler')).resolves.toBeUndefined();
  });
});
