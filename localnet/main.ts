// `tsx localnet/main.ts`: run localnet as its own process, configured from the environment.
import { startLocalnet } from './index.js';

function port(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`${name} must be a port number (0-65535), got "${raw}"`);
    process.exit(2);
  }
  return n;
}

const net = await startLocalnet({
  dataDir: process.env.LOCALNET_DATA_DIR ?? '.data/localnet',
  grpcPort: port('LOCALNET_GRPC_PORT', 50211),
  mirrorPort: port('LOCALNET_MIRROR_PORT', 5551),
  facilitatorPort: port('FACILITATOR_PORT', 4020),
  host: process.env.LOCALNET_HOST ?? '127.0.0.1',
  localnetJsonPath: process.env.LOCALNET_JSON ?? '.data/localnet.json',
  log: (line) => console.log(line),
});
console.log(`localnet ready: gRPC ${net.grpcAddress}, mirror ${net.mirrorUrl}${net.facilitatorUrl ? `, facilitator ${net.facilitatorUrl}` : ''}`);

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    net.stop().then(
      () => process.exit(0),
      (e) => {
        console.error('localnet stop failed', e);
        process.exit(1);
      },
    );
  });
}
