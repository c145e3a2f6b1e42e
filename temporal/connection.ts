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

/** The data converter both sides must share: with a key, payloads are encrypted at rest. */
export function dataConverter(config: Pick<Config, 'PAYLOAD_CODEC_KEY'>) {
  return config.PAYLOAD_CODEC_KEY ? { payloadCodecs: [new AesGcmPayloadCodec(config.PAYLOAD_CODEC_KEY)] } : undefined;
}
