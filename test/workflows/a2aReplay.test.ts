// Determinism guard of the a2aMessage workflow: its committed history (recorded by
// test/e2e/a2a.test.ts through recordFixture) replays against the current workflow code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const file = path.join(here, '..', 'fixtures', 'histories', 'a2aMessage.history.bin');

describe('replay of the recorded a2aMessage history', () => {
  it('has a recorded history', () => {
    expect(fs.existsSync(file)).toBe(true);
  });

  it('replays against workflows/index.ts', async () => {
    await expect(replayHistoryFile(file, workflowsPath, 'a2aMessage')).resolves.toBeUndefined();
  });
});
