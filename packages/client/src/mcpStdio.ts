/**
 * agent-passport-mcp: the MCP server over stdio. The API, the agent key and the ledger ids come from
 * the environment (AGENT_PASSPORT_URL, AGENT_PRIVATE_KEY or AGENT_KEY_FILE, AGENT_ACCOUNT_ID,
 * AGENT_KEY_TYPE, LOCALNET_CONFIG_PATH / A2A_TOPIC_ID / NODE_ACCOUNT_ID), never from the model.
 * A busy service (429/503 saying when to retry) is waited out for up to AGENT_PASSPORT_MAX_WAIT_S
 * (default 60) per request, each wait a line on stderr.
 * Without a key only the read-only tools are listed. stdout carries the protocol: logs go to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { AgentPassportClient } from './index.js';
import { clientOptionsFrom } from './config.js';
import { createAgentMcpServer } from './mcpTools.js';

const options = clientOptionsFrom({ keyFile: process.env.AGENT_KEY_FILE }, process.env);
const client = new AgentPassportClient({ ...options, onProgress: (line) => process.stderr.write(`${line}\n`) });
const server = createAgentMcpServer(client, { signing: Boolean(options.agent) });
await server.connect(new StdioServerTransport());
process.stderr.write(`agent-passport-mcp: ${options.baseUrl}, ${options.agent ? `acting as ${client.did}` : 'read-only (no AGENT_PRIVATE_KEY)'}\n`);
