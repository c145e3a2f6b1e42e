// Determinism guard of the directory workflows: the committed histories of agentRegistration and
// directoryRebuild (recorded by test/e2e/agents.test.ts through recordFixture) replay against the
// current workflow code.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const dir = path.join(here, '..', 'fixtures', 'histories');
const REQUIRED = ['agentRegistration', 'directoryRebuild'];

describe('replay of recorded directory workflow histories', () => {
  it.each(REQUIRED)('%s replays against workflows/index.ts', async (name) => {
    const file = path.join(dir, `${name}.history.bin`);
    expect(fs.existsSync(file)).toBe(true);
    await expect(replayHistoryFile(file, workflowsPath, name)).resolves.toBeUndefined();
  });
});
