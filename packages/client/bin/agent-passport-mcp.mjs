#!/usr/bin/env node
// Runs the MCP server over stdio through tsx (the package is source-only inside this repository).
import { register } from 'tsx/esm/api';
register();
await import('../src/mcpStdio.ts');
