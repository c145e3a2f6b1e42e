/**
 * POST /mcp: the MCP server (streamable HTTP, stateless: one server and transport per request,
 * JSON answers) with the read-only tools of packages/client/src/mcpTools.ts. The tools call this
 * API through app.inject, so they see exactly what an HTTP client sees. No key exists here: the signing and paying tools are only
 * offered by the stdio server (agent-passport-mcp), which holds the agent's key in its own process.
 * GET and DELETE answer 405 as the MCP transport spec asks of a server without sessions or a
 * server-initiated stream (body { error, code: invalid_request, hint }).
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AgentPassportClient } from '@agent-passport/client';
import { createAgentMcpServer } from '@agent-passport/client/mcp';

/**
 * fetch over app.inject: the tools' HTTP calls never leave the process, and count against the MCP
 * caller's address (rate limit) rather than the loopback address all callers would share.
 */
export function injectFetch(app: FastifyInstance, remoteAddress: string): typeof globalThis.fetch {
  return async (input, init) => {
    const req = new Request(input as string | URL | Request, init);
    const url = new URL(req.url);
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k] = v));
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.from(await req.arrayBuffer());
    const res = await app.inject({ remoteAddress, method: req.method as 'GET', url: url.pathname + url.search, headers, ...(body?.length ? { payload: body } : {}) });
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    return new Response(res.statusCode === 204 || res.statusCode === 304 ? null : res.rawPayload, { status: res.statusCode, headers: out });
  };
}

const mcpRoutes: FastifyPluginAsync = async (app) => {
  app.post('/mcp', { schema: { hide: true } }, async (request, reply) => {
    // a 429 of a tool's call goes back to the MCP caller at once: the server never holds a request to wait it out
    const options = { baseUrl: 'http://mcp.internal', fetch: injectFetch(app, request.ip), maxWaitMs: 0 };
    const client = new AgentPassportClient(options);
    const server = createAgentMcpServer(client, { signing: false });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });

  const notAllowed = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(405)
      .header('allow', 'POST')
      .send({ error: 'The MCP endpoint is stateless: send JSON-RPC requests with POST /mcp', code: 'invalid_request', hint: 'POST /mcp with Accept: application/json, text/event-stream' });
  app.get('/mcp', { schema: { hide: true } }, notAllowed);
  app.delete('/mcp', { schema: { hide: true } }, notAllowed);
};

export default mcpRoutes;
