/**
 * The client, CLI and MCP server (packages/client) as an npm package that installs outside this
 * repository. Inside the repository the workspace is TypeScript source run through tsx, and it uses
 * the workspace package @agent-passport/core (packages/core: keys, the x402 payer, the A2A envelope,
 * the sign-in challenge), which is not published. buildClientPackage bundles its entry points with
 * core's modules (esbuild; every other npm package left external), emits declarations (tsc) for both
 * and points the client's declarations at core's shipped ones, writes a package.json whose
 * dependencies are exactly the packages the bundle imports (versions as the root package.json pins
 * them; @agent-passport/core is inside, not a dependency) and runs `npm pack`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = path.join(root, 'packages', 'client', 'src');
/** The workspace package bundled into the client (its modules ship inside the tarball). */
const CORE = '@agent-passport/core';
const coreDir = path.join(root, 'packages', 'core');

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

/** Every npm package stays external except @agent-passport/core, which is bundled. */
const externalExceptCore: Plugin = {
  name: 'external-except-core',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = packageOf(args.path);
      return name && name !== CORE ? { path: args.path, external: true } : undefined;
    });
  },
};

/** Core's subpath exports ("./keys") -> their source files (packages/core/src/keys.ts). */
function coreSources(): Map<string, string> {
  const manifest = JSON.parse(fs.readFileSync(path.join(coreDir, 'package.json'), 'utf8')) as { exports: Record<string, { default: string }> };
  return new Map(Object.entries(manifest.exports).map(([sub, target]) => [`${CORE}/${sub.replace(/^\.\//, '')}`, path.join(coreDir, target.default)]));
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
  const core = coreSources();
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
      plugins: [externalExceptCore],
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
        // core's modules are root files too, so tsc emits their declarations (a package import alone would not)
        files: [...TYPED.map((f) => path.join(src, f)), ...core.values()],
        include: [],
      }),
    );
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig], { stdio: 'inherit' });
    // tsc does not copy hand-written .d.ts files: the generated OpenAPI types.
    const typesSrc = path.join(typesDir, 'packages', 'client', 'src');
    fs.copyFileSync(path.join(src, 'schema.d.ts'), path.join(typesSrc, 'schema.d.ts'));
    // The client's declarations name core by package; core ships inside: point them at its declarations.
    for (const file of fs.readdirSync(typesSrc).filter((n) => n.endsWith('.d.ts'))) {
      const at = path.join(typesSrc, file);
      const text = fs.readFileSync(at, 'utf8').replace(/(["'])(@agent-passport\/core\/[^"']+)\1/g, (whole, quote: string, specifier: string) => {
        const source = core.get(specifier);
        if (!source) throw new Error(`${file} imports ${specifier}, which @agent-passport/core does not export`);
        const declaration = path.join(typesDir, path.relative(root, source)).replace(/\.ts$/, '.js');
        const relative = path.relative(typesSrc, declaration).split(path.sep).join('/');
        return `${quote}${relative.startsWith('.') ? relative : `./${relative}`}${quote}`;
      });
      fs.writeFileSync(at, text);
    }
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
