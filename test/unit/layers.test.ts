/**
 * The layer rules of docs/conventions.md ("Where things go"), enforced (issue 21 item 7).
 *
 * Reads the table's "may import" column, then every import of every source file of the repository
 * (static imports, `import type`, `export ... from`, `import()` with a literal, `import('x').T` in
 * types) and fails on:
 *   - an import the table does not allow (naming the file, the import and the rule),
 *   - a source file in no row of the table (a new folder needs its rule first),
 *   - any import cycle among source files (type-only imports count: a circle of types is still one
 *     a reader has to untangle).
 * The last tests run the same checker on a few made-up files, so a forbidden import or a cycle is
 * seen to fail it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CONVENTIONS = 'docs/conventions.md';
const SKIP_DIRS = new Set(['node_modules', 'dist', 'coverage', 'test-output']);
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;

/**
 * Arrows the table forbids that are known and owned by work not merged yet. Each entry names the
 * importing file and the imported file; remove it when that work is in (the test then holds the rule).
 */
const WAITING: { from: string; to: string; why: string }[] = [];

// ------------------------------------------------------------------ the rules

interface Allowance {
  /** a folder (ending in /) or a file, relative to the repository root; '*' for anything */
  target: string;
  typesOnly: boolean;
}
interface Row {
  /** a folder (ending in /) or a file */
  owner: string;
  allow: Allowance[];
}

/** The rows of the table under "## Where things go": first cell the folder, last cell what it may import. */
export function parseRules(markdown: string): Row[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Where things go'));
  if (!section) throw new Error(`${CONVENTIONS} has no "## Where things go" section`);
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line) || /^\|\s*folder\s*\|/.test(line)) continue;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const owner = /^`([^`]+)`$/.exec(cells[0]!)?.[1];
    if (!owner) throw new Error(`${CONVENTIONS}: a row of "Where things go" does not start with a folder in backticks: ${line}`);
    const allow: Allowance[] = [];
    for (const m of cells[cells.length - 1]!.matchAll(/`([^`]+)`(\s*\(types\))?/g)) allow.push({ target: m[1]!, typesOnly: Boolean(m[2]) });
    rows.push({ owner, allow });
  }
  return rows;
}

/** The row a file belongs to: the longest folder (or the file itself) that holds it. */
function rowOf(rows: Row[], file: string): Row | undefined {
  let best: Row | undefined;
  for (const r of rows) {
    const holds = r.owner.endsWith('/') ? file.startsWith(r.owner) : file === r.owner;
    if (holds && (!best || r.owner.length > best.owner.length)) best = r;
  }
  return best;
}

// ------------------------------------------------------------------ the imports

interface Import {
  /** as written */
  specifier: string;
  /** the file it resolves to, relative to the root (null: a package, a built-in, or a file not in the tree) */
  target: string | null;
  typeOnly: boolean;
  line: number;
}

function specifiersOf(file: string, text: string): Omit<Import, 'target'>[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Omit<Import, 'target'>[] = [];
  const lineOf = (n: ts.Node) => src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1;
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : undefined;
      // `import type {..}`, or `import { type A, type B }` (elided from the emitted code too)
      const typeOnly = Boolean(c && (c.isTypeOnly || (!c.name && named && named.length > 0 && named.every((e) => e.isTypeOnly))));
      out.push({ specifier: n.moduleSpecifier.text, typeOnly, line: lineOf(n) });
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      const named = n.exportClause && ts.isNamedExports(n.exportClause) ? n.exportClause.elements : undefined;
      const typeOnly = n.isTypeOnly || Boolean(named && named.length > 0 && named.every((e) => e.isTypeOnly));
      out.push({ specifier: n.moduleSpecifier.text, typeOnly, line: lineOf(n) });
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteralLike(n.arguments[0])) {
      out.push({ specifier: n.arguments[0].text, typeOnly: false, line: lineOf(n) });
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      out.push({ specifier: n.argument.literal.text, typeOnly: true, line: lineOf(n) });
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

/** The workspace packages (packages/*): name -> export subpath ('.', './x') -> file relative to the root. */
export type Workspace = Map<string, Map<string, string>>;

/**
 * Resolves a specifier the way tsc (NodeNext) and tsx do: `./x.js` is `./x.ts` in the tree; a
 * workspace package's name (`@agent-passport/core/did`) is the file its package.json exports (the
 * development condition, i.e. the source). Other packages and built-ins: null (not a layer arrow).
 */
function resolve(file: string, specifier: string, exists: (f: string) => boolean, workspace: Workspace): string | null {
  for (const [name, subpaths] of workspace) {
    if (specifier === name) return subpaths.get('.') ?? null;
    if (specifier.startsWith(`${name}/`)) return subpaths.get(`./${specifier.slice(name.length + 1)}`) ?? null;
  }
  if (!specifier.startsWith('.')) return null;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
  if (base.startsWith('..') || base.split('/').includes('node_modules')) return null;
  const stem = base.replace(/\.(js|mjs|cjs|jsx)$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`, `${base}.ts`, `${base}/index.ts`, `${base}/index.js`];
  return candidates.find(exists) ?? null;
}

// ------------------------------------------------------------------ the checker

export interface Finding {
  kind: 'forbidden' | 'no rule' | 'cycle';
  message: string;
  from?: string;
  to?: string;
}

/** Every finding over `files` (path relative to the root -> its text) against `rows`. */
export function check(files: Map<string, string>, rows: Row[], workspace: Workspace = new Map()): Finding[] {
  const findings: Finding[] = [];
  const exists = (f: string) => files.has(f);
  const graph = new Map<string, Set<string>>();
  for (const [file, text] of [...files.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const row = rowOf(rows, file);
    if (!row) findings.push({ kind: 'no rule', from: file, message: `${file}: no row of "Where things go" in ${CONVENTIONS} holds it (add its folder and what it may import)` });
    const edges = new Set<string>();
    graph.set(file, edges);
    for (const imp of specifiersOf(file, text)) {
      const target = resolve(file, imp.specifier, exists, workspace);
      if (!target) continue;
      edges.add(target);
      if (!row) continue;
      const targetRow = rowOf(rows, target);
      if (targetRow === row) continue; // its own folder
      const allowed = row.allow.some((a) => (a.target === '*' || (a.target.endsWith('/') ? target.startsWith(a.target) : target === a.target)) && (!a.typesOnly || imp.typeOnly));
      if (allowed) continue;
      const may = row.allow.map((a) => `${a.target}${a.typesOnly ? ' (types)' : ''}`).join(', ') || 'nothing outside it';
      findings.push({
        kind: 'forbidden',
        from: file,
        to: target,
        message: `${file}:${imp.line} imports${imp.typeOnly ? ' type' : ''} '${imp.specifier}' (${target}): ${row.owner} may import ${may} (${CONVENTIONS}, "Where things go")`,
      });
    }
  }
  for (const { cycle, members } of cyclesOf(graph)) {
    const more = members.length > cycle.length ? ` (one of the circles among ${members.join(', ')})` : '';
    findings.push({ kind: 'cycle', message: `import cycle: ${[...cycle, cycle[0]].join(' -> ')}${more}` });
  }
  return findings;
}

/** One cycle per strongly connected component with more than one file (or a file importing itself), Tarjan. */
function cyclesOf(graph: Map<string, Set<string>>): { cycle: string[]; members: string[] }[] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: { cycle: string[]; members: string[] }[] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) !== idx.get(v)) return;
    const scc: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      on.delete(w);
      scc.push(w);
      if (w === v) break;
    }
    scc.sort();
    if (scc.length > 1 || graph.get(v)!.has(v)) out.push({ cycle: pathThrough(graph, new Set(scc), scc[0]!), members: scc });
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return out;
}

/** A shortest cycle through `start` inside its component (what a reader follows to see the circle). */
function pathThrough(graph: Map<string, Set<string>>, scc: Set<string>, start: string): string[] {
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!scc.has(w)) continue;
      if (w === start) {
        const cycle = [v];
        for (let p = prev.get(v); p !== undefined; p = prev.get(p)) cycle.unshift(p);
        return cycle[0] === start ? cycle : [start, ...cycle];
      }
      if (!prev.has(w) && w !== start) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

// ------------------------------------------------------------------ the repository

function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      if (e.name.startsWith('.') || SKIP_DIRS.has(e.name)) continue;
      const rel = dir ? `${dir}/${e.name}` : e.name;
      if (e.isDirectory()) walk(rel);
      else if (SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) files.set(rel, fs.readFileSync(path.join(ROOT, rel), 'utf8'));
    }
  };
  walk('');
  return files;
}

/** packages/<dir>/package.json's name and exports (a string, or conditions whose "default" is the source). */
function workspacePackages(): Workspace {
  const out: Workspace = new Map();
  for (const dir of fs.readdirSync(path.join(ROOT, 'packages'))) {
    const file = path.join(ROOT, 'packages', dir, 'package.json');
    if (!fs.existsSync(file)) continue;
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name: string; exports?: Record<string, string | Record<string, string>> };
    const subpaths = new Map<string, string>();
    for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
      const source = typeof target === 'string' ? target : target.default;
      if (source) subpaths.set(sub, path.posix.join('packages', dir, source));
    }
    out.set(pkg.name, subpaths);
  }
  return out;
}

const rows = parseRules(fs.readFileSync(path.join(ROOT, CONVENTIONS), 'utf8'));

describe(`the layer rules of ${CONVENTIONS}`, () => {
  const files = sourceFiles();
  const unexcused = check(files, rows, workspacePackages());
  const excused = (f: Finding) => WAITING.some((w) => w.from === f.from && w.to === f.to);
  const findings = unexcused.filter((f) => !excused(f));

  it('the table names what each folder may import', () => {
    expect(rows.length).toBeGreaterThan(10);
    for (const r of rows) for (const a of r.allow) expect(a.target === '*' || fs.existsSync(path.join(ROOT, a.target)), `${r.owner}: ${a.target} does not exist`).toBe(true);
  });

  it('every source file is in a row of the table', () => {
    expect(findings.filter((f) => f.kind === 'no rule').map((f) => f.message)).toEqual([]);
  });

  it('no file imports what its folder may not', () => {
    expect(findings.filter((f) => f.kind === 'forbidden').map((f) => f.message)).toEqual([]);
  });

  it('no import cycle among source files', () => {
    expect(findings.filter((f) => f.kind === 'cycle').map((f) => f.message)).toEqual([]);
  });

  it('every waiting exception is still needed (remove it once its work is merged)', () => {
    const unneeded = WAITING.filter((w) => !unexcused.some((f) => f.from === w.from && f.to === w.to));
    expect(unneeded).toEqual([]);
  });
});

describe('the checker itself', () => {
  const made = (entries: Record<string, string>) => new Map(Object.entries(entries));

  it('names the file and the import of a forbidden arrow', () => {
    const findings = check(made({ 'domain/fees.ts': "import { sql } from '../db/client.js';\nexport const x = 1;\n", 'db/client.ts': 'export const sql = 1;\n' }), rows);
    expect(findings.map((f) => f.message)).toEqual([expect.stringMatching(/^domain\/fees\.ts:1 imports '\.\.\/db\/client\.js' \(db\/client\.ts\): domain\/ may import/)]);
  });

  it('refuses a value import where the table allows types only', () => {
    const code = "import { passportActivities } from '../workflows/passportCommon.js';\n";
    const asValue = check(made({ 'workflows/x.ts': "import { a } from '../activities/y.js';\n", 'activities/y.ts': 'export const a = 1;\n' }), rows);
    const asType = check(made({ 'workflows/x.ts': "import type { a } from '../activities/y.js';\n", 'activities/y.ts': 'export const a = 1;\n' }), rows);
    expect(asValue.map((f) => f.kind)).toEqual(['forbidden']);
    expect(asType).toEqual([]);
    expect(check(made({ 'api/r.ts': code, 'workflows/passportCommon.ts': '' }), rows).map((f) => f.kind)).toEqual(['forbidden']);
  });

  it('sees export-from, dynamic import() and import types', () => {
    const findings = check(
      made({
        'domain/a.ts': "export * from '../api/x.js';\nexport async function f() { return import('../api/y.js'); }\nexport type T = import('../api/z.js').Z;\n",
        'api/x.ts': '',
        'api/y.ts': '',
        'api/z.ts': 'export type Z = 1;\n',
      }),
      rows,
    );
    expect(findings.map((f) => f.to)).toEqual(['api/x.ts', 'api/y.ts', 'api/z.ts']);
  });

  it('finds a cycle, type-only imports included', () => {
    const findings = check(
      made({
        'activities/index.ts': "import { createA } from './ledger/a.js';\nexport const all = createA;\n",
        'activities/ledger/a.ts': "import type { Deps } from '../index.js';\nexport function createA(d: Deps) { return d; }\n",
      }),
      rows,
    );
    expect(findings.map((f) => f.message)).toEqual(['import cycle: activities/index.ts -> activities/ledger/a.ts -> activities/index.ts']);
  });

  it('follows a workspace package by its name to its source', () => {
    const workspace: Workspace = new Map([['@agent-passport/core', new Map([['./keys', 'packages/core/src/keys.ts']])]]);
    const findings = check(made({ 'domain/a.ts': "import { k } from '@agent-passport/core/keys';\n", 'packages/core/src/keys.ts': 'export const k = 1;\n' }), rows, workspace);
    expect(findings.filter((f) => f.kind === 'forbidden').map((f) => f.to)).toEqual(['packages/core/src/keys.ts']);
  });

  it('names a file no row holds', () => {
    expect(check(made({ 'newfolder/x.ts': '' }), rows).map((f) => f.kind)).toEqual(['no rule']);
  });
});
