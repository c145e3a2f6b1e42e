// Determinism guard of the directoryProbe workflow (issue 29 item 6): its committed history (recorded
// by test/e2e/directoryLiveness.test.ts: a pass that probed four entries, two by their card and two
// by their endpoint) replays against the current workflow code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');

describe('replay of the recorded directoryProbe history', () => {
  const file = path.join(here, '..', 'fixtures', 'histories', 'directoryProbe.history.bin');
  it('directoryProbe: recorded and replays against workflows/index.ts', async () => {
    expect(fs.existsSync(file)).toBe(true);
    await expect(replayHistoryFile(file, workflowsPath, 'directoryProbe')).resolves.toBeUndefined();
  });
});
