import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config/index.js';

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
});
