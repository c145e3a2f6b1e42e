// Operators' telemetry of the real processes (issue 30): an API and a worker process of their own, on a
// private task queue, with OTLP pointed at this file's receiver (http/json) and METRICS_PORT set. An agent
// buys a passport over x402 through that API:
//   - one trace spans the API's HTTP span, the workflow start, the worker's workflow run and its activity
//     spans, down to the ledger writes, across both processes; and no attribute, event or span name of
//     any span received holds a secret (the agent's and the operator's private keys, the payload codec
//     key, the PAYMENT-SIGNATURE header, the answer's body);
//   - both processes' /metrics pass `promtool check metrics`; the API's route histogram names route
//     templates (a concrete DID never appears, a 404 of any path is route="unmatched"); the worker
//     serves the Temporal SDK's metrics, its ledger submissions by outcome and the business gauges.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/lib/ports.js';
import { promtool } from '../../scripts/lib/prometheus.js';
import { payingClient, startPassportStack, waitForPassport, type PassportStack } from '../e2e/passportHarness.js';
import { databaseUrlOf, startChildProcess, startChildWorker, type ChildWorker } from '../reliability/childWorker.js';
import { eventually } from '../support/eventually.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpReceiver.js';
import { recordSecret } from '../support/secrets.js';
import { signChallenge } from '../support/signing.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('telemetry of an API and a worker process', () => {
  let ps: PassportStack;
  let receiver: OtlpReceiver;
  let api: ChildWorker;
  let worker: ChildWorker;
  let apiUrl: string;
  let apiMetrics: string;
  let workerMetrics: string;
  const codecKey = randomBytes(32).toString('hex');

  beforeAll(async () => {
    ps = await startPassportStack('otel', { codecKey });
    receiver = await startOtlpReceiver();
    const [apiPort, apiMetricsPort, workerMetricsPort] = [await freePort(), await freePort(), await freePort()];
    const common = {
      ...ps.stack.env,
      DATABASE_URL: databaseUrlOf(ps.sql),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
      WORKFLOW_ID_SCOPE: ps.state.workflowIdScope!,
      PAYLOAD_CODEC_KEY: codecKey,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      METRICS_BUSINESS_EVERY_MS: '1000',
    };
    apiMetrics = `http://127.0.0.1:${apiMetricsPort}/metrics`;
    workerMetrics = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    worker = await startChildWorker({ ...common, METRICS_PORT: String(workerMetricsPort) });
    apiUrl = `http://127.0.0.1:${apiPort}`;
    api = await startChildProcess({
      name: 'api',
      entry: path.join(root, 'api', 'server.ts'),
      env: { ...common, HOST: '127.0.0.1', PORT: String(apiPort), RATE_LIMIT_MAX: '100000', METRICS_PORT: String(apiMetricsPort) },
      ready: async () => (await fetch(`${apiUrl}/health`).catch(() => null))?.status === 200,
    });
  });
  afterAll(async () => {
    await api?.kill('SIGTERM');
    await worker?.kill('SIGTERM');
    await receiver?.close();
    await ps?.stop();
  });

  it('one trace from the HTTP request through the workflow to its activities and ledger writes, with no secret in any span', { timeout: 240_000 }, async () => {
    const agent = ps.agents[0];
    const challenge = (await (await fetch(`${apiUrl}/auth/challenge?did=${encodeURIComponent(agent.did)}`)).json()) as { challenge: string };
    const headers = { 'x-service-did': agent.did, 'x-service-challenge': challenge.challenge, 'x-service-signature': signChallenge(agent, challenge.challenge) };
    const client = payingClient(ps, agent, { maxHbar: 10n });
    const res = await client.fetch(`${apiUrl}/passport/request`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ tier: 'bronze' }) });
    const answer = await res.text();
    expect([200, 202], answer).toContain(res.status);
    const passport = res.status === 200 ? (JSON.parse(answer) as Record<string, unknown>) : await waitForPassport(ps, agent.accountId, 120_000);
    expect(passport).toMatchObject({ tier: 'bronze' });
    const paymentSignature = client.paymentSignature();
    expect(paymentSignature).toBeTruthy();

    // the API's span of the paid request names the route template
    const http = await eventually(
      // the paid request (the first one answered 402 with the payment requirements)
      async () => receiver.spans.find((s) => s.service === 'agent-passport-api' && s.name === 'POST /passport/request' && s.attributes['http.response.status_code'] !== 402),
      (s) => s !== undefined,
      30_000,
      200,
    );
    expect(http, `spans received: ${receiver.spans.map((s) => `${s.service} ${s.name}`).join(', ')}`).toBeDefined();
    expect(http!.attributes['http.route']).toBe('/passport/request');
    const trace = (): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === http!.traceId);
    const names = (service: string) => trace().filter((s) => s.service === service).map((s) => s.name);
    // the worker's side of the same trace: the workflow run, its activities, the NFT mint through the submitter
    const spans = await eventually(
      async () => trace(),
      (list) =>
        list.some((s) => s.service === 'agent-passport-worker' && s.name === 'RunWorkflow:passportIssuance') &&
        list.some((s) => s.service === 'agent-passport-worker' && s.name.startsWith('RunActivity:')) &&
        list.some((s) => s.service === 'agent-passport-worker' && s.name === 'ledger.submit' && s.attributes['ledger.kind'] === 'nft_mint'),
      90_000,
      250,
    );
    const all = [...new Set(receiver.spans.map((s) => `${s.traceId.slice(0, 8)} ${s.service} ${s.name}`))].join('\n  ');
    const summary = `api: ${names('agent-passport-api').join(', ')}\nworker: ${names('agent-passport-worker').join(', ')}\nall spans received:\n  ${all}`;
    expect(names('agent-passport-api').some((n) => n.startsWith('StartWorkflow:') || n.startsWith('SignalWithStartWorkflow:') || n.startsWith('UpdateWithStartWorkflow:')), summary).toBe(true);
    // every span of the trace hangs off another span of it, except the HTTP span at its root
    const ids = new Set(spans.map((s) => s.spanId));
    const orphans = spans.filter((s) => s.spanId !== http!.spanId && !ids.has(s.parentSpanId));
    expect(orphans.map((s) => `${s.service} ${s.name}`), summary).toEqual([]);
    const mint = spans.find((s) => s.name === 'ledger.submit' && s.attributes['ledger.kind'] === 'nft_mint')!;
    expect(mint.attributes).toMatchObject({ 'ledger.outcome': 'succeeded', 'ledger.status': 'SUCCESS' });
    // the mirror and ledger calls of the activities are spans of the trace too
    expect(spans.some((s) => s.name === 'mirror GET'), summary).toBe(true);

    // no secret anywhere in what the processes exported (every span, not only this trace's)
    const secrets: Record<string, string> = {
      'agent private key': agent.privateKey,
      'operator private key': ps.stack.localnet.config.operator.privateKey,
      'payload codec key': codecKey,
      'PAYMENT-SIGNATURE header': paymentSignature!,
      'the answer body': answer,
    };
    for (const [label, value] of Object.entries(secrets)) recordSecret(label, value);
    const exported = JSON.stringify(receiver.spans.map((s) => [s.name, s.attributes, s.events, s.status, s.resource]));
    for (const [label, value] of Object.entries(secrets)) expect(exported.includes(value), `${label} found in a span`).toBe(false);
    // nor any piece of a header or body by name
    const keys = new Set(receiver.spans.flatMap((s) => Object.keys(s.attributes)));
    expect([...keys].filter((k) => /header|body|payload|signature|key$|secret|token|authorization/i.test(k) && k !== 'ledger.idempotency_key')).toEqual([]);
  });

  it('both processes serve metrics promtool accepts: route templates, Temporal SDK metrics, ledger and business gauges', { timeout: 120_000 }, async () => {
    const agent = ps.agents[1];
    // a concrete DID, a concrete token path and a path no route has
    expect((await fetch(`${apiUrl}/did/${encodeURIComponent(ps.agents[0].did)}`)).status).toBe(200);
    expect((await fetch(`${apiUrl}/no/such/route-${agent.accountId}`)).status).toBe(404);
    const apiText = await (await fetch(apiMetrics)).text();
    const checkApi = await promtool(['check', 'metrics'], { stdin: apiText });
    expect(checkApi.code, `${checkApi.stdout}${checkApi.stderr}`).toBe(0);
    expect(apiText).toMatch(/agent_passport_http_request_duration_seconds_count\{method="GET",route="\/did\/:did",status="200"\} 1/);
    expect(apiText).toMatch(/agent_passport_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1/);
    expect(apiText).toMatch(/agent_passport_http_request_duration_seconds_count\{method="POST",route="\/passport\/request",status="(200|202)"\} 1/);
    expect(apiText).not.toContain(agent.accountId); // no concrete path, no DID, no account in a label

    const workerText = await eventually(
      async () => (await fetch(workerMetrics)).text(),
      (t) => /agent_passport_business_metrics_last_success_timestamp_seconds [1-9]/.test(t),
      30_000,
      250,
    );
    const checkWorker = await promtool(['check', 'metrics'], { stdin: workerText });
    expect(checkWorker.code, `${checkWorker.stdout}${checkWorker.stderr}`).toBe(0);
    // the Temporal SDK's own worker metrics, served on the same port
    expect(workerText).toMatch(/^temporal_\w+/m);
    expect(workerText).toMatch(/temporal_num_pollers\{[^}]*poller_type="workflow_task"[^}]*\} [1-9]/);
    // the mint of the first test, counted by the submitter
    expect(workerText).toMatch(/agent_passport_ledger_submissions_total\{kind="nft_mint",outcome="succeeded"\} [1-9]/);
    // the business gauges: no payment waits (the passport was issued), no escrow is held and the ledger agrees
    expect(workerText).toMatch(/agent_passport_payments_awaiting_reconciliation\{age="ge_24h"\} 0/);
    expect(workerText).toMatch(/^agent_passport_escrow_drift_tinybars 0$/m);
    expect(workerText).toMatch(/agent_passport_schedule_interval_seconds\{schedule="payment_reconciler"\} \d+/);
    expect(workerText).not.toContain(agent.accountId);
  });
});
