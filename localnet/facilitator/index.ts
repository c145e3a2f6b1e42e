// The localnet's x402 facilitator: a small node:http server in front of ledger/x402/facilitator.ts.
//   GET  /supported  { kinds: [{ x402Version: 2, scheme: 'exact', network, extra: { feePayer } }], extensions: [], signers }
//   POST /verify     { x402Version, paymentPayload, paymentRequirements } -> VerifyResponse
//   POST /settle     { x402Version, paymentPayload, paymentRequirements } -> SettleResponse
// In production FACILITATOR_URL points at another facilitator; this one serves dev and tests.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createLedgerClient, type RetryOptions } from '../../ledger/client.js';
import { MirrorClient } from '../../ledger/mirror.js';
import { FileSettlementStore, HederaExactFacilitator, MemorySettlementStore } from '../../ledger/x402/facilitator.js';
import { x402NetworkId } from '@agent-passport/core/x402/network';

export interface FacilitatorServerOptions {
  host?: string;
  port?: number;
  node: { address: string; accountId: string };
  mirrorUrl: string;
  feePayer: { accountId: string; privateKey: string };
  /** settled payments are remembered in <dataDir>/facilitator-settlements.json */
  dataDir?: string;
  /** x402 network id (default hedera:local) */
  network?: string;
  retry?: RetryOptions;
}

export interface FacilitatorServer {
  url: string;
  facilitator: HederaExactFacilitator;
  stop(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(Object.assign(new Error('body too large'), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'));
      } catch {
        reject(Object.assign(new Error('invalid JSON'), { status: 400 }));
      }
    });
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function createFacilitatorServer(options: FacilitatorServerOptions): Promise<FacilitatorServer> {
  const network = options.network ?? x402NetworkId('local');
  const client = createLedgerClient({ network: 'local', node: options.node, operator: options.feePayer, retry: options.retry });
  const mirror = new MirrorClient(options.mirrorUrl);
  const store = options.dataDir ? new FileSettlementStore(path.join(options.dataDir, 'facilitator-settlements.json')) : new MemorySettlementStore();
  const facilitator = new HederaExactFacilitator({ network, client, feePayer: options.feePayer, mirror, store });

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://facilitator');
    try {
      if (req.method === 'GET' && url.pathname === '/supported') return send(res, 200, facilitator.supported());
      if (req.method === 'GET' && url.pathname === '/health') return send(res, 200, { ok: true });
      if (req.method === 'POST' && (url.pathname === '/verify' || url.pathname === '/settle')) {
        const body = (await readJson(req)) as { x402Version?: number; paymentPayload?: unknown; paymentRequirements?: unknown } | null;
        if (!body || typeof body !== 'object' || !body.paymentPayload || !body.paymentRequirements) {
          return send(res, 400, { error: 'expected { x402Version, paymentPayload, paymentRequirements }' });
        }
        if (body.x402Version !== undefined && body.x402Version !== 2) return send(res, 400, { error: 'only x402Version 2 is supported' });
        const payload = body.paymentPayload as never;
        const requirements = body.paymentRequirements as never;
        if (url.pathname === '/verify') return send(res, 200, await facilitator.verify(payload, requirements));
        return send(res, 200, await facilitator.settle(payload, requirements));
      }
      return send(res, 404, { error: 'not found' });
    } catch (err) {
      const status = (err as { status?: number }).status ?? 500;
      return send(res, status, { error: status === 500 ? 'facilitator error' : (err as Error).message });
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4020, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = options.host && options.host !== '0.0.0.0' ? options.host : '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`,
    facilitator,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      client.close();
    },
  };
}
