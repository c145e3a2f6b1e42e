import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, PRODUCTION_REQUIRED } from '../../config/index.js';

describe('config', () => {
  it('uses embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.HEDERA_NETWORK).toBe('local');
    expect(config.RATE_LIMIT_MAX).toBe(60);
  });

  it('reports every malformed variable, one line each', () => {
    try {
      loadConfig({ PORT: 'eighty', HEDERA_NETWORK: 'moon', ADMIN_TOKEN_SHA256: 'abc' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems;
      expect(problems).toHaveLength(3);
      expect(problems.join('\n')).toMatch(/PORT/);
      expect(problems.join('\n')).toMatch(/HEDERA_NETWORK/);
      expect(problems.join('\n')).toMatch(/ADMIN_TOKEN_SHA256/);
    }
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ DATABASE_URL: '' }).DATABASE_URL).toBeUndefined();
  });

  describe('TRUST_PROXY', () => {
    it('takes false, or proxy addresses and CIDR ranges', () => {
      expect(loadConfig({}).TRUST_PROXY).toBe(false);
      expect(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
      expect(loadConfig({ TRUST_PROXY: '0' }).TRUST_PROXY).toBe(false);
      expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,fd00::/8' }).TRUST_PROXY).toEqual(['10.0.0.0/8', '192.168.1.7', 'fd00::/8']);
      expect(loadConfig({ NODE_ENV: 'development', TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true);
    });

    it('refuses a hop count (it cannot tell a proxy from a direct client) and what is not an address', () => {
      expect(() => loadConfig({ TRUST_PROXY: '1' })).toThrow(/TRUST_PROXY: a hop count cannot tell a proxy from a client/);
      expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(/TRUST_PROXY: .*not an address: 10.0.0.0\/33/);
      expect(() => loadConfig({ TRUST_PROXY: 'proxy.internal' })).toThrow(/TRUST_PROXY/);
    });
  });

  describe('production', () => {
    const full = {
      NODE_ENV: 'production',
      PUBLIC_BASE_URL: 'https://passport.example',
      ADMIN_TOKEN_SHA256: 'a'.repeat(64),
      PAYLOAD_CODEC_KEY: 'b'.repeat(64),
      DATABASE_URL: 'postgres://u:p@db:5432/agent_passport',
      TEMPORAL_ADDRESS: 'temporal:7233',
      HEDERA_NETWORK: 'testnet',
      HEDERA_OPERATOR_ID: '0.0.1234',
      HEDERA_OPERATOR_KEY: 'c'.repeat(64),
      HEDERA_MIRROR_URL: 'https://testnet.mirrornode.hedera.com/api/v1',
      FACILITATOR_URL: 'https://facilitator.example',
      TRUST_SIGNING_KEY: '302e020100300506032b6570042204209d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
      TRUST_SIGNING_KEY_ID: 'trust-1',
      OAUTH_SIGNING_KEY: '302e020100300506032b657004220420c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
      OAUTH_SIGNING_KEY_ID: 'oauth-1',
      ESCROW_PRIVATE_KEY: '302e020100300506032b657004220420a1c5e9d0f4b6c3a2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8',
    };
    /** the API's part (issue 26 item 9): no key to the money */
    const { HEDERA_OPERATOR_KEY: _operatorKey, ESCROW_PRIVATE_KEY: _escrowKey, ...fullApi } = full;

    const problemsOf = (env: Record<string, string>, role: 'api' | 'worker' = 'api') => {
      try {
        loadConfig(env, { role });
        return [];
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
    };

    it('the API refuses to start without each required variable, one line per missing variable', () => {
      const problems = problemsOf({ NODE_ENV: 'production' });
      for (const name of ['PUBLIC_BASE_URL', 'ADMIN_TOKEN_SHA256', 'PAYLOAD_CODEC_KEY', 'DATABASE_URL', 'HEDERA_OPERATOR_ID', 'HEDERA_MIRROR_URL', 'FACILITATOR_URL', 'TEMPORAL_ADDRESS']) {
        expect(problems.filter((p) => p.startsWith(`${name}:`))).toHaveLength(1);
      }
      expect(problems).toHaveLength(PRODUCTION_REQUIRED.api.length);
    });

    it('names exactly the one that is missing, and also reports malformed variables in the same go', () => {
      const { ADMIN_TOKEN_SHA256: _omit, ...rest } = fullApi;
      expect(problemsOf(rest)).toEqual(['ADMIN_TOKEN_SHA256: missing (required when NODE_ENV=production)']);
      const both = problemsOf({ ...rest, PORT: 'eighty' });
      expect(both).toHaveLength(2);
      expect(both.join('\n')).toMatch(/PORT/);
      expect(both.join('\n')).toMatch(/ADMIN_TOKEN_SHA256/);
    });

    it('refuses TRUST_PROXY=true (any X-Forwarded-For believed), for the API and the worker alike; proxy addresses start', () => {
      for (const role of ['api', 'worker'] as const) {
        expect(problemsOf({ ...(role === 'api' ? fullApi : full), TRUST_PROXY: 'true' }, role)).toEqual([expect.stringMatching(/^TRUST_PROXY: true trusts any X-Forwarded-For/)]);
      }
      expect(problemsOf({ ...fullApi, TRUST_PROXY: 'yes' })).toHaveLength(1);
      expect(loadConfig({ ...fullApi, TRUST_PROXY: '10.0.0.0/8' }, { role: 'api' }).TRUST_PROXY).toEqual(['10.0.0.0/8']);
      expect(() => loadConfig({ NODE_ENV: 'production', TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY/);
    });

    it('starts with everything set; the worker does not need the admin token or the facilitator', () => {
      expect(loadConfig(fullApi, { role: 'api' }).NODE_ENV).toBe('production');
      const { ADMIN_TOKEN_SHA256: _a, FACILITATOR_URL: _f, ...worker } = full;
      expect(problemsOf(worker, 'worker')).toEqual([]);
      const { ADMIN_TOKEN_SHA256: _a2, FACILITATOR_URL: _f2, ...api } = fullApi;
      expect(problemsOf(api, 'api')).toHaveLength(2);
    });

    it('the worker refuses to start without the escrow key (it signs escrow payouts and refunds); the API does not need it', () => {
      const { ESCROW_PRIVATE_KEY: _e, ...rest } = full;
      expect(problemsOf(rest, 'worker')).toEqual(['ESCROW_PRIVATE_KEY: missing (required when NODE_ENV=production)']);
      expect(problemsOf(fullApi, 'api')).toEqual([]);
    });

    it('the API holds no key to the money (issue 26 item 9): it starts without the operator key and refuses the operator and escrow keys', () => {
      expect(PRODUCTION_REQUIRED.api).not.toContain('HEDERA_OPERATOR_KEY');
      expect(PRODUCTION_REQUIRED.worker).toEqual(expect.arrayContaining(['HEDERA_OPERATOR_KEY', 'ESCROW_PRIVATE_KEY']));
      expect(problemsOf(fullApi, 'api')).toEqual([]);
      expect(problemsOf({ ...fullApi, HEDERA_OPERATOR_KEY: full.HEDERA_OPERATOR_KEY }, 'api')).toEqual([expect.stringMatching(/^HEDERA_OPERATOR_KEY: .*worker/)]);
      expect(problemsOf({ ...fullApi, ESCROW_PRIVATE_KEY: full.ESCROW_PRIVATE_KEY }, 'api')).toEqual([expect.stringMatching(/^ESCROW_PRIVATE_KEY: .*worker/)]);
      expect(problemsOf(full, 'api')).toHaveLength(2);
      // no refusal outside production, nor for the worker, which signs
      expect(problemsOf(full, 'worker')).toEqual([]);
      expect(() => loadConfig({ NODE_ENV: 'development', HEDERA_OPERATOR_KEY: full.HEDERA_OPERATOR_KEY }, { role: 'api' })).not.toThrow();
      // the key is never echoed in the refusal
      expect(problemsOf(full, 'api').join('\n')).not.toContain(full.HEDERA_OPERATOR_KEY);
    });

    it('development and scripts without a role need none of them', () => {
      expect(() => loadConfig({ NODE_ENV: 'development' }, { role: 'api' })).not.toThrow();
      expect(() => loadConfig({ NODE_ENV: 'production' })).not.toThrow();
    });

    // issue 26 item 5: fail closed. Only the dev launcher and the tests set development (or test).
    it('is the default: an unset NODE_ENV is production, with its start-up checks', () => {
      expect(loadConfig({}).NODE_ENV).toBe('production');
      const { NODE_ENV: _n, ...unset } = fullApi;
      expect(loadConfig(unset, { role: 'api' }).NODE_ENV).toBe('production');
      const { PAYLOAD_CODEC_KEY: _k, ...noKey } = unset;
      expect(problemsOf(noKey)).toEqual(['PAYLOAD_CODEC_KEY: missing (required when NODE_ENV=production)']);
      expect(problemsOf({ TRUST_PROXY: 'true' }, 'worker')).toContainEqual(expect.stringMatching(/^TRUST_PROXY: true trusts any X-Forwarded-For/));
    });

    it('refuses the SSRF guard\'s off switches (TRUST_ALLOW_PRIVATE, TRUST_FETCH_ORIGINS), one line each, with or without a role', () => {
      for (const role of ['api', 'worker'] as const) {
        const env = role === 'api' ? fullApi : full;
        expect(problemsOf({ ...env, TRUST_ALLOW_PRIVATE: 'true' }, role)).toEqual([expect.stringMatching(/^TRUST_ALLOW_PRIVATE: .*refused when NODE_ENV=production/)]);
        expect(problemsOf({ ...env, TRUST_FETCH_ORIGINS: 'a.test=http://127.0.0.1:4321' }, role)).toEqual([expect.stringMatching(/^TRUST_FETCH_ORIGINS: .*refused when NODE_ENV=production/)]);
      }
      expect(problemsOf({ ...fullApi, TRUST_ALLOW_PRIVATE: 'yes', TRUST_FETCH_ORIGINS: 'a.test=http://127.0.0.1:4321' })).toHaveLength(2);
      // unset: the default production, and a script without a role, refuse them as well
      expect(() => loadConfig({ TRUST_ALLOW_PRIVATE: '1' })).toThrow(/TRUST_ALLOW_PRIVATE/);
      // false is what production runs with; the tests set them with NODE_ENV=test
      expect(loadConfig({ ...fullApi, TRUST_ALLOW_PRIVATE: 'false' }, { role: 'api' }).TRUST_ALLOW_PRIVATE).toBe(false);
      expect(loadConfig({ NODE_ENV: 'test', TRUST_ALLOW_PRIVATE: 'true', TRUST_FETCH_ORIGINS: 'a.test=http://127.0.0.1:4321' }).TRUST_ALLOW_PRIVATE).toBe(true);
    });
  });
});
