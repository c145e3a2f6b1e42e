/**
 * POST /market/sign (SPEC 4.4a, 5): signs the body bytes of a frozen Hedera transaction with a key
 * from the request body and answers the detached signature and public key, for clients without a
 * Hedera SDK: prepare-payment -> /market/sign -> complete { txBytes, signature, publicKey }.
 *
 * Local: no ledger call, nothing stored, nothing submitted. The key is parsed by @agent-passport/core/keys,
 * used once in memory and dropped; it is never logged (the body field is redacted by name), never
 * returned and never quoted in an error. DID signature headers are required (SPEC 5 lists this
 * route under DID signature; 401 without them); the key need not be the signed-in account's.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { marketSignBodySchema, marketSignResultSchema } from '../../schemas/marketPayments.js';
import { keyTypeOf, parsePrivateKey, publicKeyToDerHex, signBytes } from '@agent-passport/core/keys';
import { decodeTransactionBase64, singleBodyBytes, TransferCheckError } from '../../../ledger/transferCheck.js';

export const SIGN_REQUEST_LIMIT_BYTES = 64 * 1024;

const signRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app) => {
  app.post(
    '/market/sign',
    {
      bodyLimit: SIGN_REQUEST_LIMIT_BYTES,
      schema: {
        tags: ['market'],
        summary: 'Sign transaction bytes locally with a key from the body',
        description:
          'DID signature headers are required. txBytes: base64 of a frozen transaction for one node (e.g. prepare-payment txBytes). ' +
          "Answers a hex signature over the transaction's body bytes and the DER-hex public key; the key is used in memory only and " +
          'never stored, logged or returned. Nothing is sent to the ledger. 400 for bytes that are not such a transaction or a key that cannot be parsed.',
        body: marketSignBodySchema,
        response: { 200: marketSignResultSchema, ...errorResponses(400, 401, 500) },
      },
      preHandler: app.signedRequest(),
    },
    async (request) => {
      const { txBytes, privateKey } = request.body;
      let body: Uint8Array;
      let transactionId: string;
      try {
        const tx = decodeTransactionBase64(txBytes);
        body = singleBodyBytes(tx);
        if (!tx.transactionId) throw new TransferCheckError('invalid_bytes', 'the transaction has no transaction id');
        transactionId = tx.transactionId.toString();
      } catch (err) {
        if (err instanceof TransferCheckError) throw new ApiError('invalid_request', `txBytes: ${err.message}`, { hint: err.hint ?? 'Send base64 of a frozen transaction (prepare-payment txBytes)' });
        throw err;
      }
      let key;
      try {
        key = parsePrivateKey(privateKey);
      } catch {
        throw new ApiError('invalid_request', 'privateKey could not be parsed', { hint: 'Send ECDSA as 0x-hex (32 bytes) or DER hex, ED25519 as DER hex' });
      }
      const signature = Buffer.from(signBytes(key, body)).toString('hex');
      return { signature, publicKey: publicKeyToDerHex(key.publicKey), keyType: keyTypeOf(key), transactionId };
    },
  );
};

export default signRoutes;
