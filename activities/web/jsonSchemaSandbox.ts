/**
 * json_schema validation in a worker thread with a deadline. The schema is the poster's and the data
 * the claimer's, so a "pattern" with catastrophic backtracking could otherwise hold the worker
 * process's event loop (every activity of the worker) for minutes. The thread is terminated at the
 * deadline and the verification fails with that reason. The thread runs plain CommonJS (eval), so
 * it works the same under tsx, vitest and the built dist/.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { AJV_OPTIONS, ajvErrorReasons, type JsonSchemaInputs, type VerifierOutcome } from '../../domain/verifiers.js';

const require = createRequire(import.meta.url);
const AJV_PATHS = { '07': require.resolve('ajv'), '2020': require.resolve('ajv/dist/2020') };

const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const mod = require(workerData.ajvPath);
const Ajv = mod.default || mod;
parentPort.postMessage({ ready: true });
try {
  const validate = new Ajv(workerData.options).compile(workerData.schema);
  const valid = validate(workerData.value) === true;
  parentPort.postMessage({ valid, errors: (validate.errors || []).map((e) => ({ instancePath: e.instancePath, message: e.message })) });
} catch (err) {
  parentPort.postMessage({ failure: String((err && err.message) || err).slice(0, 160) });
}
`;

export const JSON_SCHEMA_DEADLINE_MS = 2_000;
/** Starting a thread and loading ajv is not the poster's time: it has its own, generous bound. */
export const THREAD_START_LIMIT_MS = 30_000;

export function validateInThread(inputs: Pick<JsonSchemaInputs, 'schema' | 'dialect' | 'value'>, deadlineMs = JSON_SCHEMA_DEADLINE_MS): Promise<VerifierOutcome> {
  return new Promise((resolve) => {
    const worker = new Worker(SOURCE, {
      eval: true,
      workerData: { ajvPath: AJV_PATHS[inputs.dialect], options: AJV_OPTIONS, schema: inputs.schema, value: inputs.value },
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
    });
    let settled = false;
    const finish = (outcome: VerifierOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(outcome);
    };
    // The deadline bounds compiling and validating only; it starts when the thread has loaded ajv,
    // so a busy machine's slow thread start-up is not mistaken for a catastrophic pattern.
    let timer = setTimeout(() => finish({ passed: false, reasons: ['the schema validator did not start'] }), THREAD_START_LIMIT_MS);
    worker.on('message', (m: { ready?: boolean; valid?: boolean; errors?: { instancePath?: string; message?: string }[]; failure?: string }) => {
      if (m.ready) {
        clearTimeout(timer);
        timer = setTimeout(() => finish({ passed: false, reasons: [`the schema did not finish validating within ${deadlineMs} ms (check its patterns)`] }), deadlineMs);
        return;
      }
      if (m.failure !== undefined) finish({ passed: false, reasons: [`verifierConfig.schema does not compile: ${m.failure}`] });
      else finish({ passed: m.valid === true, reasons: m.valid ? [] : ajvErrorReasons(m.errors ?? []) });
    });
    worker.once('error', (err) => finish({ passed: false, reasons: [`the schema validation failed: ${err.message.slice(0, 160)}`] }));
    worker.once('exit', () => finish({ passed: false, reasons: ['the schema validation stopped without an answer'] }));
  });
}
