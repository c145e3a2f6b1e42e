/**
 * Remote codec endpoint for the Temporal Web UI (`temporal server start-dev --ui-codec-endpoint`
 * or the UI's "Codec Server" setting): POST /codec/decode and /codec/encode with
 * { payloads: [{ metadata: { k: base64 }, data: base64 }] }. When ADMIN_TOKEN_SHA256 is set the UI
 * must pass the admin token, so only operators who hold it can read decrypted history.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Payload } from '@temporalio/common';
import { AesGcmPayloadCodec } from '../../temporal/codec.js';
import type { AppContext } from '../context.js';
import { requireAdmin } from '../plugins/adminAuth.js';
import { errorResponses } from '../schemas/common.js';

const jsonPayload = z.object({ metadata: z.record(z.string(), z.string()).optional(), data: z.string().optional() });
const body = z.object({ payloads: z.array(jsonPayload) });

const toPayload = (p: z.infer<typeof jsonPayload>): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: p.data === undefined ? undefined : Buffer.from(p.data, 'base64'),
});
const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v as Uint8Array).toString('base64')])),
  data: p.data ? Buffer.from(p.data).toString('base64') : undefined,
});

const codecRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const key = ctx.config.PAYLOAD_CODEC_KEY;
  if (!key) return;
  const codec = new AesGcmPayloadCodec(key);
  const guard = ctx.config.ADMIN_TOKEN_SHA256 ? [requireAdmin(ctx.config.ADMIN_TOKEN_SHA256)] : [];
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
