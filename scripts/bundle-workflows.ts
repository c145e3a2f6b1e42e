/** Builds the workflow bundle ahead of time for production (dist/workflow-bundle.js). */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const { code } = await bundleWorkflowCode({ workflowsPath: path.resolve('workflows/index.ts') });
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/workflow-bundle.js', code);
console.log(`wrote dist/workflow-bundle.js (${(code.length / 1024).toFixed(0)} KiB)`);
