/** Security headers and CORS for every route. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet from '@fastify/helmet';
import cors from '@fastify/cors';

export default fp(async function securityPlugin(app: FastifyInstance, opts: { corsOrigins: string }) {
  await app.register(helmet, {
    // The API reference page at /docs loads its own scripts and styles from this origin.
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", "'unsafe-inline'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', 'https:'],
      },
    },
    crossOriginResourcePolicy: { policy: 'cross-origin' },
  });
  const origins = opts.corsOrigins === '*' ? true : opts.corsOrigins.split(',').map((o) => o.trim());
  await app.register(cors, {
    origin: origins,
    // The preflight is not answered inside CORS's onRequest hook but by its OPTIONS route, so the
    // rate limit (a later onRequest hook) counts it and sets X-RateLimit-* on it like on any answer.
    preflightContinue: true,
    // An OPTIONS request without Origin gets an ordinary answer, not a text/plain 400.
    strictPreflight: false,
    exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'PAYMENT-REQUIRED', 'PAYMENT-RESPONSE', 'X-Request-Id'],
  });
});
