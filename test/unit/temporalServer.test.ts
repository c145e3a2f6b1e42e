/** The dev launcher's Temporal dev server arguments: the Web UI decodes payloads through the API's codec. */
import { describe, expect, it } from 'vitest';
import { devLauncherTemporalOptions, temporalDevServerArgs } from '../../scripts/lib/temporalServer.js';

describe('temporal dev server arguments', () => {
  it('the dev launcher points the Web UI at the API codec (--ui-codec-endpoint, CLI v1.5.1)', () => {
    const args = temporalDevServerArgs(devLauncherTemporalOptions({ apiPort: 3000, dataDir: '/tmp/data' }));
    const at = args.indexOf('--ui-codec-endpoint');
    expect(at).toBeGreaterThan(0);
    expect(args[at + 1]).toBe('http://localhost:3000/codec');
    expect(args).toContain('--ui-port');
    expect(args[args.indexOf('--ui-port') + 1]).toBe('8233');
    expect(args[args.indexOf('--db-filename') + 1]).toBe('/tmp/data/temporal.sqlite');
  });

  it('follows the API port and the Temporal ports from the environment', () => {
    const args = temporalDevServerArgs(devLauncherTemporalOptions({ apiPort: 3100, temporalPort: '7300', uiPort: '8300', dataDir: '/d' }));
    expect(args[args.indexOf('--ui-codec-endpoint') + 1]).toBe('http://localhost:3100/codec');
    expect(args[args.indexOf('--port') + 1]).toBe('7300');
    expect(args[args.indexOf('--ui-port') + 1]).toBe('8300');
  });

  it('a headless server (tests) gets no codec endpoint', () => {
    const args = temporalDevServerArgs({ port: 7233, codecEndpoint: 'http://localhost:3000/codec' });
    expect(args).toContain('--headless');
    expect(args).not.toContain('--ui-codec-endpoint');
  });
});
