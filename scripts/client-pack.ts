/**
 * npm run client:pack [-- --out DIR]: the client, CLI and MCP server as an installable npm package
 * (scripts/lib/clientPackage.ts), written to DIR (default dist/packages) as a .tgz.
 */
import { parseArgs } from 'node:util';
import { buildClientPackage } from './lib/clientPackage.js';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'dist/packages' } } });
const { tarball, manifest } = await buildClientPackage(values.out!, (line) => console.log(`[client:pack] ${line}`));
console.log(`[client:pack] ${manifest.name}@${manifest.version}: ${tarball}`);
console.log(`[client:pack] dependencies: ${Object.entries(manifest.dependencies).map(([n, v]) => `${n}@${v}`).join(', ')}`);
