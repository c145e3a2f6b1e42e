/**
 * npm run dev: the whole stack on embedded defaults, in dependency order, each stage printing
 * where it listens: PostgreSQL, the Temporal dev server (Web UI :8233), localnet (HAPI gRPC,
 * mirror REST, x402 facilitator), the local EVM node, migrations, the worker, the API. State lives
 * in .data/ (DEV_DATA_DIR) so a second run keeps the first run's data. localnet, the worker and the
 * API are restarted when they die. Ctrl-C stops exactly what was started; so does a failed start.
 *
 * The stages live in scripts/lib/devStages.ts (shared with `npm run dev:cluster`) and run through
 * scripts/lib/launcher.ts. To add a component, add a Stage: it receives what earlier stages exported
 * (env and URLs), registers what it starts with ctx.onStop, and returns its own env and URLs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config/index.js';
import { devLauncherTemporalOptions, startTemporalDevServer } from './lib/temporalServer.js';
import { launch, type Stage, type StageResult } from './lib/launcher.js';
import { apiStage, devEnv, devSecrets, evmStage, localnetJsonStage, localnetStage, postgresStage, prefixed, workerStage } from './lib/devStages.js';

// A local .env (see .env.example) is read when present; the real environment wins.
if (fs.existsSync('.env')) process.loadEnvFile('.env');

const DATA = path.resolve(process.env.DEV_DATA_DIR ?? '.data');
// development, as for the processes it starts (devEnv): the one launcher that sets it
const config = loadConfig({ ...process.env, NODE_ENV: 'development' });
const secrets = devSecrets(DATA);

const temporalStage: Stage = {
  name: 'temporal',
  async start(_env, ctx): Promise<StageResult> {
    if (config.TEMPORAL_ADDRESS) return { env: { TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS }, urls: { Temporal: `${config.TEMPORAL_ADDRESS} (external)` } };
    const server = await startTemporalDevServer({
      ...devLauncherTemporalOptions({ apiPort: config.PORT, temporalPort: process.env.TEMPORAL_PORT, uiPort: process.env.TEMPORAL_UI_PORT, dataDir: DATA }),
      log: prefixed('temporal'),
      signal: ctx.signal,
    });
    ctx.onStop('temporal', server.stop);
    return { env: { TEMPORAL_ADDRESS: server.address }, urls: { 'Temporal frontend': server.address, 'Temporal Web UI': server.uiUrl! } };
  },
};

await launch({
  title: 'Agent passport stack is up',
  env: devEnv(secrets),
  stages: [
    postgresStage({ dataDir: DATA, databaseUrl: config.DATABASE_URL }),
    temporalStage,
    localnetStage({ dataDir: DATA }),
    evmStage({ dataDir: DATA, externalRpcUrl: config.EVM_RPC_URL, port: Number(process.env.EVM_PORT ?? 8545) }),
    localnetJsonStage({ dataDir: DATA, apiUrl: `http://127.0.0.1:${config.PORT}`, adminToken: secrets.adminToken }),
    workerStage(),
    apiStage({
      port: config.PORT,
      urls: () => ({
        API: `http://localhost:${config.PORT}`,
        'API reference': `http://localhost:${config.PORT}/docs`,
        OpenAPI: `http://localhost:${config.PORT}/openapi.json`,
        'Admin token': `in ${path.join(DATA, 'dev-secrets.json')}`,
      }),
    }),
  ],
});
