/** Secrets sent to the API (admin token, signatures, private keys in bodies) never reach the log. */
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { testConfig } from '../support/app.js';

/** A log stream that keeps every line in memory. */
function captureLog() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, stream };
}

describe('logging', () => {
  it('logs requests at debug level without authorization, signatures or private keys', async () => {
    const { lines, stream } = captureLog();
    const app = await buildApp(
      { config: testConfig({ LOG_LEVEL: 'trace', PAYLOAD_CODEC_KEY: randomBytes(32).toString('hex') }) },
      { logger: { stream } },
    );
    const secret = `secret-${randomBytes(8).toString('hex')}`;
    app.post('/__test/echo-fail', async (req) => {
      req.log.info({ body: req.body }, 'handling');
      throw new Error('boom');
    });
    await app.inject({
      method: 'POST',
      url: '/__test/echo-fail',
      headers: { authorization: `Bearer ${secret}`, 'x-service-signature': `${secret}-sig`, 'payment-signature': `${secret}-pay` },
      payload: { privateKey: `${secret}-pk`, posterPrivateKey: `${secret}-ppk`, note: 'visible' },
    });
    await app.close();
    const log = lines.join('');
    expect(log).toContain('visible'); // the body was logged...
    expect(log).toContain('[redacted]'); // ...with its secret fields censored
    expect(log).not.toContain(secret);
  });

  it('censors secret-named keys at any depth in logged bodies and errors', async () => {
    const { lines, stream } = captureLog();
    const app = await buildApp({ config: testConfig({ LOG_LEVEL: 'trace' }) }, { logger: { stream } });
    const secret = `deep-${randomBytes(8).toString('hex')}`;
    app.post('/__test/deep', async (req) => {
      req.log.info({ body: req.body }, 'nested body');
      const err = Object.assign(new Error('upstream refused'), {
        response: { config: { headers: { Authorization: `Bearer ${secret}-err` }, data: { wallet: { operatorKey: `${secret}-opk` } } } },
      });
      err.cause = { request: { payload: { api_key: `${secret}-cause` } } };
      req.log.error({ err }, 'failed');
      req.log.warn({ list: [{ level1: { level2: { level3: { adminToken: `${secret}-array` } } } }] }, 'array');
      return { ok: true };
    });
    await app.inject({
      method: 'POST',
      url: '/__test/deep',
      payload: {
        agent: { wallet: { keys: { privateKey: `${secret}-l4`, label: 'visible-label' } } },
        list: [{ nested: [{ claimerPrivateKey: `${secret}-in-array` }] }],
        a: { b: { c: { d: { password: `${secret}-l5` } } } },
      },
    });
    await app.close();
    const log = lines.join('');
    expect(log).toContain('visible-label');
    expect(log).toContain('upstream refused');
    expect(log).toContain('[redacted]');
    expect(log).not.toContain(secret);
  });
});
