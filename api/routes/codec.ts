/**
 * Remote codec endpoint for the Temporal Web UI (`temporal server start-dev --ui-codec-endpoint`
 * or the UI's "Codec Server" setting): POST /codec/decode and /codec/encode with
 * { payloads: [{ metadata: { k: base64 }, data: base64 }] }.
 *
 * Who may call it (`codecTrusts`): a holder of the admin token, anywhere; and, only when
 * NODE_ENV=development, a caller on the loopback interface with no proxy in between, because the
 * Temporal Web UI's codec settings can pass the user's OIDC token or cookies but never an arbitrary
 * bearer token (NOTES.md) -- this is what lets the dev UI decode payloads with no set-up. Outside
 * dev the codec always needs the admin token (none configured: closed). Trusted callers are not
 * rate-limited here: the UI and the CLI call once per payload.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { Payload } from '@temporalio/common';
import type { Config } from '../../config/index.js';
import { AesGcmPayloadCodec } from '../../temporal/codec.js';
import type { AppContext } from '../context.js';
import { hasAdminToken, refuseNonAdmin } from '../plugins/adminAuth.js';
import { errorResponses } from '../schemas/common.js';

const jsonPayload = z.object({ metadata: z.record(z.string(), z.string()).optional(), data: z.string().optional() });
const body = z.object({ payloads: z.array(jsonPayload).max(10_000) });

const toPayload = (p: z.infer<typeof jsonPayload>): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: p.data === undefined ? undefined : Buffer.from(p.data, 'base64'),
});
const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v as Uint8Array).toString('base64')])),
  data: p.data ? Buffer.from(p.data).toString('base64') : undefined,
});

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;

/** The TCP peer is this machine and no proxy forwarded the request. */
export function isDirectLoopback(request: FastifyRequest): boolean {
  const h = request.headers;
  if (h['x-forwarded-for'] || h.forwarded || h['x-real-ip']) return false;
  return LOOPBACK.test(request.raw.socket?.remoteAddress ?? '');
}

/** Whether this caller may use the codec (and is exempt from the rate limit there). */
export function codecTrusts(config: Config, request: FastifyRequest): boolean {
  if (hasAdminToken(request, config.ADMIN_TOKEN_SHA256)) return true;
  return config.NODE_ENV === 'development' && isDirectLoopback(request);
}

const codecRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const key = ctx.config.PAYLOAD_CODEC_KEY;
  if (!key) return;
  // Display only: an unencrypted payload in history (written in development, or injected) is shown as
  // it is stored; the worker and the API's client refuse it (temporal/codec.ts).
  const codec = new AesGcmPayloadCodec(key, { acceptPlaintext: true });
  const guard = async (request: FastifyRequest) => {
    if (!codecTrusts(ctx.config, request)) refuseNonAdmin(request);
  };
  // The UI calls from its own origin with the Temporal namespace header.
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('access-control-allow-origin', ctx.config.CODEC_CORS_ORIGIN);
    reply.header('access-control-allow-headers', 'content-type,x-namespace,authorization');
    reply.header('access-control-allow-credentials', 'true');
    return payload;
  });
  const schema = { tags: ['health'], hide: true, body, response: { 200: body, ...errorResponses(400, 401, 403) } };
  app.post('/codec/decode', { schema, preHandler: guard }, async (req) => ({ payloads: (await codec.decode(req.body.payloads.map(toPayload))).map(toJson) }));
  app.post('/codec/encode', { schema, preHandler: guard }, async (req) => ({ payloads: (await codec.encode(req.body.payloads.map(toPayload))).map(toJson) }));
};

export default codecRoutes;
