/**
 * npm run seed -- [--agents N] [--open-tasks N] [--closed-tasks N] [--allow-remote-host]
 *
 * Fills the running dev stack's database with passports, directory entries and marketplace tasks
 * (scripts/lib/seed.ts says what and how), so reads can be measured at a user's size (issue 31;
 * bench/http.ts). The database is DATABASE_URL (from the environment or .env, as `npm run dev` reads
 * it), else the local server on 127.0.0.1:5432 the launcher uses. Refused in production (NODE_ENV=production,
 * a server not on this machine, passports of a real network). Idempotent for a given size.
 * Defaults: 10,000 agents, 10,000 open and 100,000 closed tasks.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { createSql } from '../db/client.js';
import { DEFAULT_DATABASE } from './lib/postgres.js';
import { isPortOpen } from './lib/ports.js';
import { seedDatabase, seedRefusal } from './lib/seed.js';

if (fs.existsSync('.env')) process.loadEnvFile('.env');

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '10000' },
    'open-tasks': { type: 'string', default: '10000' },
    'closed-tasks': { type: 'string', default: '100000' },
    'allow-remote-host': { type: 'boolean', default: false },
  },
});

function count(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0 || n > 10_000_000) {
    console.error(`--${name} must be a whole number from 0 to 10,000,000 (got ${v})`);
    process.exit(2);
  }
  return n;
}
const size = { agents: count('agents', values.agents), openTasks: count('open-tasks', values['open-tasks']), closedTasks: count('closed-tasks', values['closed-tasks']) };

let url = process.env.DATABASE_URL;
if (!url && (await isPortOpen(5432))) url = `postgres://postgres@127.0.0.1:5432/${DEFAULT_DATABASE}`;
if (!url) {
  console.error('No database: set DATABASE_URL to the dev stack\'s (npm run dev prints it), or run PostgreSQL on 127.0.0.1:5432');
  process.exit(2);
}

const sql = createSql(url, { max: 2 });
try {
  const refusal = await seedRefusal(sql, url, process.env, values['allow-remote-host']);
  if (refusal) {
    console.error(`seed refused: ${refusal}`);
    process.exitCode = 3;
  } else {
    const started = Date.now();
    console.log(`seeding ${url.replace(/:[^:@/]*@/, ':***@')}: ${size.agents} agents, ${size.openTasks} open and ${size.closedTasks} closed tasks`);
    const r = await seedDatabase(sql, size, (line) => console.log(`  ${line}`));
    console.log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${r.passports} passports, ${r.agents} directory entries, ${r.tasks} tasks new`);
  }
} finally {
  await sql.end({ timeout: 5 });
}
