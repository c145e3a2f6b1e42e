/**
 * Measuring what a flood costs the operator (issue 20, "Deliver"; test/reliability/abuseFlood.test.ts):
 *  - requests from real, distinct source addresses: every client socket is bound to its own
 *    127.x.y.z (Linux routes all of 127.0.0.0/8 to lo), so the API, with TRUST_PROXY unset, sees that
 *    address as the client and counts every per-address quota against it;
 *  - an API instance's PostgreSQL client that counts every statement it sends (postgres.js `debug`),
 *    and its own Temporal connection that counts every gRPC call it makes (StartWorkflowExecution,
 *    UpdateWorkflowExecution, GetSystemInfo, ...);
 *  - the workflows started on a task queue since a moment (Temporal visibility, read after a sentinel
 *    workflow started later is visible, so every earlier start is indexed too);
 *  - what an account paid on the ledger since a moment (the localnet mirror's transactions);
 *  - how many fixed quota windows (aligned to the epoch, as db/queries/quotas.ts counts them) a
 *    measurement spans, since a bound per window holds once per window touched.
 * Everything here is driven over HTTP and Temporal; nothing reaches into the API's modules.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Sql } from '../../db/client.js';
import type { MirrorClient } from '../../ledger/mirror.js';

/** The `i`-th source address of address group `group` (never 127.0.0.1): 127.{10+group}.{i / 200}.{i % 200 + 2}. */
export function loopbackAddress(group: number, i: number): string {
  return `127.${10 + group}.${Math.floor(i / 200)}.${(i % 200) + 2}`;
}

export function loopbackAddresses(group: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => loopbackAddress(group, i));
}

export interface FloodCall {
  /** the source address the socket is bound to */
  address: string;
  method?: 'GET' | 'POST';
  path: string;
  /** JSON body (POST) */
  body?: unknown;
  headers?: Record<string, string>;
  /** which API instance (index into the urls); default: spread round robin by the flood */
  instance?: number;
  /** free label for grouping answers */
  label?: string;
}

export interface FloodAnswer {
  call: FloodCall;
  instance: number;
  status: number;
  headers: http.IncomingHttpHeaders;
  /** parsed JSON, or the text when the answer is not JSON */
  body: any;
}

/** HTTP clients, one keep-alive agent per source address, against several API instances. */
export class LoopbackClient {
  private readonly agents = new Map<string, http.Agent>();
  private next = 0;

  constructor(readonly urls: string[]) {}

  private agentFor(address: string): http.Agent {
    let agent = this.agents.get(address);
    if (!agent) {
      agent = new http.Agent({ keepAlive: true, maxSockets: 4, localAddress: address });
      this.agents.set(address, agent);
    }
    return agent;
  }

  send(call: FloodCall): Promise<FloodAnswer> {
    const instance = call.instance ?? this.next++ % this.urls.length;
    const url = new URL(call.path, this.urls[instance]);
    const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
    const headers: Record<string, string> = { ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}), ...call.headers };
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: call.method ?? (payload ? 'POST' : 'GET'), headers, agent: this.agentFor(call.address) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          if (String(res.headers['content-type'] ?? '').includes('json')) {
            try {
              body = JSON.parse(text);
            } catch {
              body = text;
            }
          }
          resolve({ call, instance, status: res.statusCode ?? 0, headers: res.headers, body });
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Sends every call, `concurrency` at a time, in the order given; answers in the same order. */
  async flood(calls: FloodCall[], concurrency: number): Promise<FloodAnswer[]> {
    const answers: FloodAnswer[] = new Array(calls.length);
    let next = 0;
    const lane = async () => {
      for (;;) {
        const i = next++;
        if (i >= calls.length) return;
        answers[i] = await this.send(calls[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
    return answers;
  }

  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}

/** Each address's calls, interleaved (one call of every address in turn), so the addresses compete all along. */
export function interleaveByAddress(perAddress: FloodCall[][]): FloodCall[] {
  const out: FloodCall[] = [];
  const longest = Math.max(0, ...perAddress.map((c) => c.length));
  for (let k = 0; k < longest; k++) for (const calls of perAddress) if (k < calls.length) out.push(calls[k]!);
  return out;
}

/** Per address, how many answers had each status. */
export function statusesByAddress(answers: FloodAnswer[]): Map<string, Record<number, number>> {
  const out = new Map<string, Record<number, number>>();
  for (const a of answers) {
    const c = out.get(a.call.address) ?? {};
    c[a.status] = (c[a.status] ?? 0) + 1;
    out.set(a.call.address, c);
  }
  return out;
}

/** A PostgreSQL client for one API instance that records every statement it sends. */
export interface CountingSql {
  sql: Sql;
  /** statements sent so far (text, lower-cased, whitespace collapsed) */
  statements: string[];
  /** how many statements so far match `re` */
  count(re: RegExp): number;
  end(): Promise<void>;
}

export function countingSql(url: string, max = 4): CountingSql {
  const statements: string[] = [];
  // the options of db/client.ts createSql, plus the debug hook
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    types: { bigint: postgres.BigInt },
    connection: { application_name: 'agent-passport-flood' },
    debug: (_connection: number, query: string) => {
      statements.push(query.replace(/\s+/g, ' ').trim().toLowerCase());
    },
  }) as unknown as Sql;
  return {
    sql,
    statements,
    count: (re) => statements.filter((s) => re.test(s)).length,
    end: () => sql.end(),
  };
}

const workflowservice = proto.temporal.api.workflowservice.v1;

/** A Temporal client on its own connection that records its gRPC calls (method, and the workflow id a request names). */
export interface CountingTemporal {
  client: Client;
  /** every call so far, in order */
  calls: { method: string; workflowId?: string }[];
  /** calls so far of a method (StartWorkflowExecution, UpdateWorkflowExecution, GetSystemInfo, ...), optionally naming a workflow */
  count(method: string, workflowId?: string): number;
  close(): Promise<void>;
}

/** The requests whose workflow id is recorded (decoded from the request bytes). */
const NAMED_REQUESTS: Record<string, { decode(bytes: Uint8Array): { workflowExecution?: { workflowId?: string | null } | null; workflowId?: string | null } }> = {
  UpdateWorkflowExecution: workflowservice.UpdateWorkflowExecutionRequest,
  StartWorkflowExecution: workflowservice.StartWorkflowExecutionRequest,
  SignalWithStartWorkflowExecution: workflowservice.SignalWithStartWorkflowExecutionRequest,
  SignalWorkflowExecution: workflowservice.SignalWorkflowExecutionRequest,
};

export async function countingTemporal(address: string, namespace = 'default'): Promise<CountingTemporal> {
  const calls: { method: string; workflowId?: string }[] = [];
  const counter: Interceptor = (options, nextCall) => {
    const method = options.method_definition.path.split('/').pop() ?? options.method_definition.path;
    return new InterceptingCall(nextCall(options), {
      sendMessage(message: unknown, next: (m: unknown) => void) {
        const type = NAMED_REQUESTS[method];
        let workflowId: string | undefined;
        if (type) {
          // the client sends the request encoded already (a plain object when it is not)
          const req = message instanceof Uint8Array ? type.decode(message) : (message as ReturnType<typeof type.decode>);
          workflowId = req?.workflowExecution?.workflowId ?? req?.workflowId ?? undefined;
        }
        calls.push({ method, ...(workflowId ? { workflowId } : {}) });
        next(message);
      },
    });
  };
  // after the retry interceptor: every attempt of a retried call is counted
  const connection = await Connection.connect({ address, interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), counter] });
  return {
    client: new Client({ connection, namespace }),
    calls,
    count: (method, workflowId) => calls.filter((c) => c.method === method && (workflowId === undefined || c.workflowId === workflowId)).length,
    close: () => connection.close(),
  };
}

/** How many fixed windows of `windowMs` (aligned to the epoch) the interval [fromMs, toMs] touches. */
export function windowsSpanned(windowMs: number, fromMs: number, toMs: number): number {
  return Math.floor(toMs / windowMs) - Math.floor(fromMs / windowMs) + 1;
}

/**
 * The workflows started on `taskQueue` at or after `sinceMs`, by workflow type. Visibility is
 * indexed asynchronously: a sentinel workflow is started (on a queue nobody polls) and, once it is
 * visible, the query is read; then the sentinel is terminated.
 */
export async function workflowsStartedSince(client: Client, taskQueue: string, sinceMs: number): Promise<Map<string, string[]>> {
  const sentinelId = `flood-sentinel-${randomUUID()}`;
  // a type no worker runs (not one of ours, so no contract): only its visibility matters
  const sentinel = await client.workflow.start('floodSentinel', { taskQueue: `${taskQueue}-sentinel`, workflowId: sentinelId });
  try {
    const since = new Date(sinceMs).toISOString();
    const end = Date.now() + 30_000;
    for (;;) {
      let seen = false;
      for await (const _ of client.workflow.list({ query: `WorkflowId = '${sentinelId}'` })) seen = true;
      if (seen) break;
      if (Date.now() > end) throw new Error('the sentinel workflow never became visible');
      await new Promise((r) => setTimeout(r, 100));
    }
    const byType = new Map<string, string[]>();
    for await (const w of client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND StartTime >= '${since}'` })) {
      byType.set(w.type, [...(byType.get(w.type) ?? []), w.workflowId]);
    }
    return byType;
  } finally {
    await sentinel.terminate('flood measurement done').catch(() => undefined);
  }
}

/** A mirror transaction, as the localnet mirror lists it. */
export interface MirrorTransaction {
  transaction_id: string;
  name: string;
  entity_id: string | null;
  charged_tx_fee: number;
  consensus_timestamp: string;
  result: string;
  memo_base64: string;
  transfers: { account: string; amount: number }[];
}

/** "seconds.nanoseconds" of a wall-clock time, as the mirror's timestamp filters take it. */
export function mirrorTimestamp(ms: number): string {
  return `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}000000`;
}

/** Every transaction that moved HBAR of `accountId` or that it paid for, after `sinceMs`. */
export function transactionsOf(mirror: MirrorClient, accountId: string, sinceMs: number): Promise<MirrorTransaction[]> {
  return mirror.collect<MirrorTransaction>(`/transactions?account.id=${accountId}&timestamp=gt:${mirrorTimestamp(sinceMs)}&order=asc&limit=100`, 'transactions');
}

/** A topic's messages after `sinceMs` (decoded message bytes). */
export async function topicMessagesSince(mirror: MirrorClient, topicId: string, sinceMs: number): Promise<Buffer[]> {
  const rows = await mirror.collect<{ message: string }>(`/topics/${topicId}/messages?timestamp=gt:${mirrorTimestamp(sinceMs)}&limit=100`, 'messages');
  return rows.map((m) => Buffer.from(m.message, 'base64'));
}

/** The net HBAR movement of `accountId` in a transaction (fees included), in tinybars. */
export function netOf(tx: MirrorTransaction, accountId: string): bigint {
  return tx.transfers.filter((t) => t.account === accountId).reduce((sum, t) => sum + BigInt(t.amount), 0n);
}
