/**
 * Which DID a signed request says it is signed by: the body field that names it (posterDid,
 * claimerDid, did, from, owner), read after the body was validated by the route's zod schema. Given to
 * `app.signedRequest(bodyDid('posterDid'))`, so no route casts its body to read one field.
 */
import type { FastifyRequest } from 'fastify';

export function bodyDid<K extends string>(field: K): (request: FastifyRequest) => string | undefined {
  return (request) => {
    const body: unknown = request.body;
    if (typeof body !== 'object' || body === null || !(field in body)) return undefined;
    const value: unknown = Reflect.get(body, field);
    return typeof value === 'string' ? value : undefined;
  };
}
