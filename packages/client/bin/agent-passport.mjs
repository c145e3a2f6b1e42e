#!/usr/bin/env node
// Runs the TypeScript CLI through tsx (the package is source-only inside this repository).
import { register } from 'tsx/esm/api';
register();
await import('../src/cli.ts');
