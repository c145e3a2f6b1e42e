// Determinism guard of chainIndexer: the committed history (recorded by test/evm/indexer.test.ts,
// RECORD_HISTORIES=1 to re-record on purpose) replays against the current workflows/index.ts.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistoryFile } from '../support/temporal.js';

const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));
const file = fileURLToPath(new URL('../fixtures/histories/chainIndexer.history.bin', import.meta.url));

describe('chainIndexer replay', () => {
  it('replays the recorded history against workflows/index.ts', async () => {
    expect(existsSync(file)).toBe(true);
    await expect(replayHistoryFile(file, workflowsPath, 'chainIndexer')).resolves.toBeUndefined();
  });
});
