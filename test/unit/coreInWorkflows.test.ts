/**
 * Workflows may import @agent-passport/core (packages/core) only where the module they name is
 * bundle-safe: it and every module it imports in turn import no Node built-in and no npm package
 * (the worker bundles workflow code with webpack into a sandbox without them). Today that is
 * @agent-passport/core/did; keys, a2a (Buffer) and the x402 payer are not for workflows.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.join(import.meta.dirname, '..', '..');
const coreDir = path.join(root, 'packages', 'core');
const coreExports = JSON.parse(readFileSync(path.join(coreDir, 'package.json'), 'utf8')).exports as Record<string, { default: string }>;
const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Value imports of a file (type-only imports vanish in the bundle). */
function valueImports(file: string): string[] {
  const out: string[] = [];
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) if (!m[2]) out.push((m[3] ?? m[4])!);
  return out;
}

/** What a module of core reaches that a workflow sandbox lacks (built-ins, npm packages), with the path. */
function unsafeReach(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const found: string[] = [];
  for (const spec of valueImports(file)) {
    if (spec.startsWith('.')) found.push(...unsafeReach(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')), seen));
    else found.push(`${path.relative(root, file)} imports ${spec}`);
  }
  for (const global of ['Buffer', 'process']) if (new RegExp(`\\b${global}\\.`).test(readFileSync(file, 'utf8'))) found.push(`${path.relative(root, file)} uses ${global}`);
  return found;
}

function workflowFiles(): string[] {
  const dir = path.join(root, 'workflows');
  return (readdirSync(dir, { recursive: true }) as string[]).filter((n) => n.endsWith('.ts')).map((n) => path.join(dir, n));
}

describe('@agent-passport/core in workflow code', () => {
  it('workflows import only bundle-safe modules of core', () => {
    const problems: string[] = [];
    let imported = 0;
    for (const file of workflowFiles()) {
      for (const spec of valueImports(file)) {
        if (!spec.startsWith('@agent-passport/')) continue;
        const sub = spec.startsWith('@agent-passport/core/') ? `./${spec.slice('@agent-passport/core/'.length)}` : null;
        const target = sub ? coreExports[sub]?.default : undefined;
        if (!target) {
          problems.push(`${path.relative(root, file)} imports ${spec}, which is not a module of @agent-passport/core`);
          continue;
        }
        imported++;
        for (const p of unsafeReach(path.join(coreDir, target))) problems.push(`${path.relative(root, file)} -> ${spec}: ${p}`);
      }
    }
    expect(problems).toEqual([]);
    expect(imported).toBeGreaterThan(0);
  });

  it('the check sees what a workflow sandbox lacks', () => {
    expect(unsafeReach(path.join(coreDir, coreExports['./keys']!.default))).toEqual(expect.arrayContaining([expect.stringContaining('imports node:crypto')]));
    expect(unsafeReach(path.join(coreDir, coreExports['./a2a']!.default))).toEqual(expect.arrayContaining([expect.stringContaining('uses Buffer')]));
    expect(unsafeReach(path.join(coreDir, coreExports['./did']!.default))).toEqual([]);
  });
});
