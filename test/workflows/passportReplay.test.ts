// Determinism guard: the committed histories of the passport workflows (recorded by the e2e and
// workflow tests, see test/e2e/passportHarness.ts recordFixture) replay against the current code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const dir = path.join(here, '..', 'fixtures', 'histories');
const REQUIRED = ['passportIssuance', 'passportUpgrade', 'passportRevoke'];

describe('replay of recorded passport workflow histories', () => {
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^passport.*\.history\.bin$/.test(f)).sort() : [];

  it('has a recorded history of each passport workflow', () => {
    for (const name of REQUIRED) expect(files).toContain(`${name}.history.bin`);
  });

  it.each(files)('%s replays against workflows/index.ts', async (file) => {
    await expect(replayHistoryFile(path.join(dir, file), workflowsPath, file.replace('.history.bin', ''))).resolves.toBeUndefined();
  });
});
