// packages/client/src/schema.d.ts must be what `npm run client:generate` writes for the current
// routes: the test regenerates it (the app's OpenAPI document, built without services) into a temp
// file and compares. On failure: run `npm run client:generate` and commit the schema.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SCHEMA_PATH } from '../../scripts/client-generate.js';

describe('packages/client schema.d.ts', () => {
  it('is what client:generate produces from the current /openapi.json (else: npm run client:generate)', () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'client-schema-')), 'schema.d.ts');
    execFileSync(process.execPath, ['--import', 'tsx', 'scripts/client-generate.ts', out], { cwd: path.join(import.meta.dirname, '..', '..'), stdio: ['ignore', 'ignore', 'inherit'] });
    const fresh = fs.readFileSync(out, 'utf8');
    expect(fresh).toContain('"/passport/request"');
    expect(fresh === fs.readFileSync(SCHEMA_PATH, 'utf8'), 'packages/client/src/schema.d.ts is stale: run npm run client:generate').toBe(true);
  }, 180_000);
});
