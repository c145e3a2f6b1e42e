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
    exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'PAYMENT-REQUIRED', 'PAYMENT-RESPONSE', 'X-Request-Id'],
  });
});
