// Determinism guard of the taskLifecycle workflow: its committed histories (recorded by
// test/e2e/market.test.ts through recordFixture: a completed escrow task, a funded task cancelled
// and refunded, a funded task cancelled at its deadline) replay against the current workflow code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const histories = ['taskLifecycle-completed', 'taskLifecycle-refunded', 'taskLifecycle-deadline'];

describe('replay of the recorded taskLifecycle histories', () => {
  for (const name of histories) {
    const file = path.join(here, '..', 'fixtures', 'histories', `${name}.history.bin`);
    it(`${name}: recorded and replays against workflows/index.ts`, async () => {
      expect(fs.existsSync(file)).toBe(true);
      await expect(replayHistoryFile(file, workflowsPath, 'taskLifecycle')).resolves.toBeUndefined();
    });
  }
});
