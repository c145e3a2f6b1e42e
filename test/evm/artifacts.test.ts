import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildAll, ROOT_DIR } from '../../contracts/compile.js';

describe('contract artifacts', () => {
  it('are up to date with contracts/*.sol (run `npm run contracts:build` when this fails)', () => {
    const files = buildAll();
    expect(Object.keys(files).sort()).toEqual([
      'contracts/artifacts/AgentPassport.json',
      'contracts/artifacts/BenchEmitter.json',
      'contracts/artifacts/TaskEscrow.json',
      'evm/abis.ts',
      'evm/bytecode.ts',
    ]);
    for (const [rel, content] of Object.entries(files)) {
      let committed = '';
      try {
        committed = readFileSync(join(ROOT_DIR, rel), 'utf8');
      } catch {
        /* missing file: reported below */
      }
      expect(committed === content, `${rel} is out of date: run npm run contracts:build`).toBe(true);
    }
  }, 60_000);
});
