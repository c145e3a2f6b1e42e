/** Connection settings for the Temporal frontend, shared by the worker and the API's client. */
import type { Config } from '../config/index.js';
import { AesGcmPayloadCodec } from './codec.js';

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

export function temporalAddress(config: Pick<Config, 'TEMPORAL_ADDRESS'>): string {
  return config.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;
}

export function connectionOptions(config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_TLS' | 'TEMPORAL_API_KEY'>) {
  return {
    address: temporalAddress(config),
    tls: config.TEMPORAL_TLS || Boolean(config.TEMPORAL_API_KEY) ? {} : undefined,
    apiKey: config.TEMPORAL_API_KEY,
  };
}

/**
 * The data converter both sides (worker, API client) must share: with a key, payloads are encrypted
 * at rest, and an unencrypted payload is refused on decode except in development (temporal/codec.ts),
 * where a developer may still signal or start workflows from the CLI by hand. Without a key there is
 * no codec at all, which only development and tests may run: production requires PAYLOAD_CODEC_KEY
 * (config PRODUCTION_REQUIRED for the api and worker roles), and this refuses too, for any other
 * process that reaches Temporal with a production configuration.
 */
export function dataConverter(config: Pick<Config, 'PAYLOAD_CODEC_KEY' | 'NODE_ENV'>) {
  if (!config.PAYLOAD_CODEC_KEY) {
    if (config.NODE_ENV === 'production') throw new Error('PAYLOAD_CODEC_KEY is required when NODE_ENV=production: Temporal payloads are always encrypted there');
    return undefined;
  }
  return { payloadCodecs: [new AesGcmPayloadCodec(config.PAYLOAD_CODEC_KEY, { acceptPlaintext: config.NODE_ENV === 'development' })] };
}
