/** zod schemas of GET /api/search (SPEC 2 "Search result", 4.7). */
import { z } from 'zod';
import { linkMapSchema } from './common.js';

/** Bounds of a query (issue 12): 1-200 characters after trimming. */
export const SEARCH_QUERY_MAX = 200;
/** Results per answer: default and maximum. */
export const SEARCH_LIMIT_DEFAULT = 20;
export const SEARCH_LIMIT_MAX = 100;

export const searchQuerySchema = z
  .object({
    q: z.string().trim().min(1).max(SEARCH_QUERY_MAX).describe('Case-insensitive substring of an agent name, DID, skill or capability, or of a task title, description or capability'),
    type: z.enum(['agent', 'task']).optional().describe('Only agents or only tasks (default: both)'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(SEARCH_LIMIT_MAX)
      .default(SEARCH_LIMIT_DEFAULT)
      .describe(`Most results in the answer (default ${SEARCH_LIMIT_DEFAULT}, at most ${SEARCH_LIMIT_MAX}); with both types, each type gets half unless the other has fewer matches`),
  });

export const agentSearchResultSchema = z
  .object({
    type: z.literal('agent'),
    did: z.string(),
    name: z.string(),
    tier: z.string(),
    capabilities: z.array(z.string()),
    active: z.boolean(),
    skills: z.array(z.string()).optional(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'AgentSearchResult' });

export const taskSearchResultSchema = z
  .object({
    type: z.literal('task'),
    taskId: z.string(),
    title: z.string(),
    priceHbar: z.number(),
    capabilities: z.array(z.string()),
    status: z.string(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'TaskSearchResult' });

export const searchResultSchema = z
  .object({
    query: z.string().describe('The query as matched (trimmed)'),
    results: z.array(z.union([agentSearchResultSchema, taskSearchResultSchema])).describe('Agents (newest registration first), then tasks (newest first)'),
    count: z.number().int().describe('Number of results in this answer'),
  })
  .meta({ id: 'SearchResult' });
