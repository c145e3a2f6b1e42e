// The search attributes temporal:setup registers and the worker checks (temporal/searchAttributes.ts)
// are exactly those the workflow code defines: a new defineSearchAttributeKey without an entry here
// would pass on the dev server only if its flags named it, and fail every task on a cluster.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SEARCH_ATTRIBUTES, searchAttributeRefusal } from '../../temporal/searchAttributes.js';
import { temporalDevServerArgs } from '../../scripts/lib/temporalServer.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TYPE_NAMES: Record<string, string> = { KEYWORD: 'Keyword', DOUBLE: 'Double', INT: 'Int', BOOL: 'Bool', DATETIME: 'Datetime', TEXT: 'Text', KEYWORD_LIST: 'KeywordList' };

function definedInWorkflows(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        for (const m of fs.readFileSync(p, 'utf8').matchAll(/defineSearchAttributeKey\(\s*'([^']+)'\s*,\s*SearchAttributeType\.([A-Z_]+)\s*\)/g)) out[m[1]!] = TYPE_NAMES[m[2]!] ?? m[2]!;
      }
    }
  };
  walk(path.join(root, 'workflows'));
  return out;
}

describe('custom search attributes', () => {
  it('the registered list is exactly what workflows/ defines, with the same types', () => {
    const defined = definedInWorkflows();
    expect(Object.keys(defined).length).toBeGreaterThan(0);
    expect({ ...SEARCH_ATTRIBUTES }).toEqual(defined);
  });

  it('the dev server is started with every one of them', () => {
    const args = temporalDevServerArgs({ port: 7233 });
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) expect(args).toContain(`${name}=${type}`);
  });

  it('the worker refuses with one line naming what is missing and the command that fixes it', () => {
    expect(searchAttributeRefusal({ missing: [], wrongType: [] }, 'default')).toBeNull();
    const line = searchAttributeRefusal({ missing: ['TaskStatus', 'PriceHbar'], wrongType: [] }, 'prod')!;
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain('TaskStatus (Keyword) is missing');
    expect(line).toContain('PriceHbar (Double) is missing');
    expect(line).toContain('"prod"');
    expect(line).toContain('npm run temporal:setup');
  });
});
