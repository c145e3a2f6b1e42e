/**
 * Builds the workflow bundles ahead of time for production: dist/workflow-bundle.js, and
 * dist/workflow-bundle-traced.js with the OpenTelemetry workflow interceptors compiled in (a bundle's
 * interceptors are fixed when it is built; the worker picks the traced one while tracing runs:
 * worker/createWorker.ts workflowSource).
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { TRACING_WORKFLOW_INTERCEPTORS } from '../worker/telemetry.js';

fs.mkdirSync('dist', { recursive: true });
const workflowsPath = path.resolve('workflows/index.ts');
for (const [file, workflowInterceptorModules] of [
  ['dist/workflow-bundle.js', []],
  ['dist/workflow-bundle-traced.js', [TRACING_WORKFLOW_INTERCEPTORS]],
] as const) {
  const { code } = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [...workflowInterceptorModules] });
  fs.writeFileSync(file, code);
  console.log(`wrote ${file} (${(code.length / 1024).toFixed(0)} KiB)`);
}
