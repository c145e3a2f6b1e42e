/**
 * The client, CLI and MCP server (packages/client) as an npm package that installs outside this
 * repository. Inside the repository the workspace is TypeScript source run through tsx, and it uses
 * repository modules (ledger/keys.ts, ledger/x402/clientScheme.ts, domain/a2a.ts), so it cannot be
 * published as it is. buildClientPackage bundles its entry points with those modules (esbuild, every
 * npm package left external), emits declarations (tsc), writes a package.json whose dependencies are
 * exactly the packages the bundle imports (versions as the root package.json pins them) and runs
 * `npm pack`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = path.join(root, 'packages', 'client', 'src');

/** Output name -> entry: the library, its MCP tools, and the two programs. */
const ENTRIES = { index: 'index.ts', mcp: 'mcpTools.ts', cli: 'cli.ts', 'mcp-stdio': 'mcpStdio.ts' } as const;
/** Entries with public types (the programs have none). */
const TYPED = ['index.ts', 'mcpTools.ts'];

/** The package an import specifier names ("@scope/name/sub" -> "@scope/name", "name/sub" -> "name"). */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('node:') || specifier.startsWith('.') || specifier.startsWith('/')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

export interface ClientPackage {
  /** the .tgz npm pack wrote */
  tarball: string;
  /** the package.json inside it */
  manifest: { name: string; version: string; dependencies: Record<string, string>; [k: string]: unknown };
}

export async function buildClientPackage(outDir: string, log: (line: string) => void = () => {}): Promise<ClientPackage> {
  const rootManifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const workspace = JSON.parse(fs.readFileSync(path.join(root, 'packages', 'client', 'package.json'), 'utf8'));
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'client-package-'));
  try {
    log('bundling (esbuild)');
    const result = await build({
      entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([out, file]) => [out, path.join(src, file)])),
      outdir: path.join(stage, 'dist'),
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      metafile: true,
      logLevel: 'warning',
    });

    // Dependencies: every package the bundle imports, at the version the root package.json pins.
    const wanted = new Set<string>();
    for (const output of Object.values(result.metafile.outputs))
      for (const imp of output.imports) if (imp.external) {
        const name = packageOf(imp.path);
        if (name) wanted.add(name);
      }
    const pinned = { ...rootManifest.devDependencies, ...rootManifest.dependencies } as Record<string, string>;
    const dependencies: Record<string, string> = {};
    for (const name of [...wanted].sort()) {
      const version = pinned[name];
      if (!version) throw new Error(`the client bundle imports ${name}, which the root package.json does not list`);
      dependencies[name] = version;
    }

    log('declarations (tsc)');
    const typesDir = path.join(stage, 'dist', 'types');
    const tsconfig = path.join(stage, 'tsconfig.json');
    fs.writeFileSync(
      tsconfig,
      JSON.stringify({
        extends: path.join(root, 'tsconfig.json'),
        compilerOptions: { declaration: true, emitDeclarationOnly: true, sourceMap: false, rootDir: root, outDir: typesDir, typeRoots: [path.join(root, 'node_modules', '@types')] },
        files: TYPED.map((f) => path.join(src, f)),
        include: [],
      }),
    );
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig], { stdio: 'inherit' });
    // tsc does not copy hand-written .d.ts files: the generated OpenAPI types.
    const typesSrc = path.join(typesDir, 'packages', 'client', 'src');
    fs.copyFileSync(path.join(src, 'schema.d.ts'), path.join(typesSrc, 'schema.d.ts'));
    const typesOf = (file: string) => `./${path.relative(stage, path.join(typesSrc, file.replace(/\.ts$/, '.d.ts'))).split(path.sep).join('/')}`;

    fs.mkdirSync(path.join(stage, 'bin'));
    for (const [bin, entry] of [
      ['agent-passport.mjs', 'cli.js'],
      ['agent-passport-mcp.mjs', 'mcp-stdio.js'],
    ] as const)
      fs.writeFileSync(path.join(stage, 'bin', bin), `#!/usr/bin/env node\nimport '../dist/${entry}';\n`, { mode: 0o755 });
    fs.copyFileSync(path.join(root, 'packages', 'client', 'README.md'), path.join(stage, 'README.md'));

    const manifest = {
      name: workspace.name,
      version: workspace.version,
      description: workspace.description,
      license: rootManifest.license ?? 'UNLICENSED',
      type: 'module',
      engines: { node: '>=20' },
      exports: {
        '.': { types: typesOf('index.ts'), default: './dist/index.js' },
        './mcp': { types: typesOf('mcpTools.ts'), default: './dist/mcp.js' },
      },
      bin: workspace.bin,
      files: ['dist', 'bin', 'README.md'],
      dependencies,
    };
    fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');

    log('npm pack');
    fs.mkdirSync(outDir, { recursive: true });
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', path.resolve(outDir)], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    ) as { filename: string }[];
    return { tarball: path.join(path.resolve(outDir), packed[0]!.filename), manifest };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}
