// Determinism guard of the domain trust workflows: the committed histories of domainOwnership
// (recorded by test/e2e/trustOwnership.test.ts: one proven through checkNow updates, one expired)
// and of trustAttest (recorded by test/e2e/trustAttest.test.ts) replay against the current code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const dir = path.join(here, '..', 'fixtures', 'histories');
const REQUIRED = ['domainOwnershipVerified', 'domainOwnershipExpired', 'trustAttest'];

describe('replay of recorded domain trust workflow histories', () => {
  it.each(REQUIRED)('%s replays against workflows/index.ts', async (name) => {
    const file = path.join(dir, `${name}.history.bin`);
    expect(fs.existsSync(file)).toBe(true);
    await expect(replayHistoryFile(file, workflowsPath, name)).resolves.toBeUndefined();
  });
});
