// The HAPI gRPC endpoint. Every method of every service is registered; transactions are dispatched
// on the decoded body, not on the method (the SDK sends some transactions to other methods).
import * as grpc from '@grpc/grpc-js';
import { proto, Status } from './proto.js';
import { handleQuery } from './queries.js';
import type { Engine } from './engine.js';

const SERVICES = [
  'CryptoService',
  'TokenService',
  'ConsensusService',
  'ScheduleService',
  'FileService',
  'SmartContractService',
  'NetworkService',
  'FreezeService',
  'UtilService',
  'AddressBookService',
] as const;

type Kind = 'transaction' | 'query';

/** Discover methods and whether they take a Transaction or a Query, from the generated service class. */
function methodsOf(service: string): { name: string; kind: Kind }[] {
  const S = (proto as unknown as Record<string, { prototype: Record<string, unknown> } | undefined>)[service];
  if (!S) return [];
  const out: { name: string; kind: Kind }[] = [];
  for (const m of Object.getOwnPropertyNames(S.prototype)) {
    if (m === 'constructor') continue;
    const fn = S.prototype[m];
    if (typeof fn !== 'function') continue;
    let captured: { name: string; kind: Kind } | null = null;
    const probe = Object.create(S.prototype) as Record<string, unknown>;
    probe.rpcCall = (method: { name: string }, req: unknown) => {
      captured = { name: method.name, kind: req === proto.Query ? 'query' : 'transaction' };
    };
    try {
      (fn as (r: unknown, cb: () => void) => void).call(probe, {}, () => {});
    } catch {
      // not an rpc method
    }
    if (captured) out.push(captured);
  }
  return out;
}

const passthrough = (b: Buffer) => b;

export interface GrpcHandle {
  address: string;
  port: number;
  stop(): Promise<void>;
}

export async function startGrpcServer(engine: Engine, host: string, port: number): Promise<GrpcHandle> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 8 * 1024 * 1024 });
  for (const service of SERVICES) {
    const methods = methodsOf(service);
    if (!methods.length) continue;
    const def: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const { name, kind } of methods) {
      def[name] = {
        path: `/proto.${service}/${name}`,
        requestStream: false,
        responseStream: false,
        // Raw bytes in, so a malformed message becomes a HAPI status rather than a gRPC error.
        requestSerialize: passthrough,
        requestDeserialize: passthrough,
        responseSerialize: passthrough,
        responseDeserialize: passthrough,
        originalName: name,
      };
      impl[name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        if (engine.faults.isUnavailable()) {
          callback({ code: grpc.status.UNAVAILABLE, details: 'node unavailable (fault injected)' });
          return;
        }
        try {
          if (kind === 'transaction') {
            const code = engine.submit(call.request);
            const res = proto.TransactionResponse.encode({ nodeTransactionPrecheckCode: code }).finish();
            callback(null, Buffer.from(res));
          } else {
            const res = proto.Response.encode(handleQuery(engine, call.request)).finish();
            callback(null, Buffer.from(res));
          }
        } catch (err) {
          // An internal bug must not take the node down; report it as a failed precheck.
          console.error('[localnet] handler error', err);
          if (kind === 'transaction') {
            const res = proto.TransactionResponse.encode({ nodeTransactionPrecheckCode: Status.FAIL_INVALID }).finish();
            callback(null, Buffer.from(res));
          } else callback({ code: grpc.status.INTERNAL, details: 'internal error' });
        }
      };
    }
    server.addService(def as grpc.ServiceDefinition, impl);
  }
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    address: `${host}:${bound}`,
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Clients keep connections open; do not wait for them forever.
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1000).unref();
      }),
  };
}
