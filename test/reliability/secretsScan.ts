/**
 * The secrets scan (issue 13, item 5): every secret the tests recorded (test/support/secrets.ts) is
 * searched for in the API logs the tests wrote, in the rows of the databases (the run's database
 * and each e2e stack's, dumped before it was dropped) and in the decoded Temporal histories (every
 * workflow of the run's namespaces, payloads decoded from base64; encrypted payloads are counted, not
 * decoded) and in the files localnet stacks left (their journals, each transaction decoded from
 * base64, and the facilitator's settlements; keepLedgerFiles). Each secret is searched as given and,
 * for Hedera DER keys, as raw hex and base64.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PrivateKey } from '@hashgraph/sdk';
import { Client, Connection } from '@temporalio/client';
import postgres from 'postgres';

export interface Secret {
  label: string;
  value: string;
}

export interface ScanReport {
  secrets: number;
  logFiles: number;
  logBytes: number;
  databases: number;
  rows: number;
  workflows: number;
  /** the Temporal namespaces whose histories were read */
  namespaces?: number;
  payloads: number;
  encryptedPayloads: number;
  /** files of localnet data directories (journals, facilitator settlements) and the transactions of their journals */
  ledgerFiles: number;
  transactions: number;
  /** where each secret was found: `label in source` */
  found: string[];
}

/** The forms a secret may take in text. */
export function needlesOf(value: string): string[] {
  const out = new Set([value.toLowerCase()]);
  if (/^30[0-9a-f]{64,}$/i.test(value)) {
    // a DER key (SEQUENCE, longer than a raw key; the SDK warns about anything else it is given)
    try {
      const raw = PrivateKey.fromStringDer(value).toBytesRaw();
      out.add(Buffer.from(raw).toString('hex'));
      out.add(Buffer.from(raw).toString('base64').toLowerCase());
    } catch {
      // not a DER key: the value itself only
    }
  }
  return [...out].filter((n) => n.length >= 16);
}

/** Secrets recorded by every test process of the run (deduplicated by value). */
export function readSecrets(dir: string): Secret[] {
  const byValue = new Map<string, Secret>();
  for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!/^secrets-\d+\.jsonl$/.test(f)) continue;
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      const s = JSON.parse(line) as Secret;
      if (!byValue.has(s.value)) byValue.set(s.value, s);
    }
  }
  return [...byValue.values()];
}

class Haystack {
  found = new Set<string>();
  constructor(private readonly secrets: { label: string; needles: string[] }[]) {}
  search(text: string, source: string) {
    const lower = text.toLowerCase();
    for (const s of this.secrets) if (s.needles.some((n) => lower.includes(n))) this.found.add(`${s.label} in ${source}`);
  }
}

/** Every string of a history (failure messages, stack traces, ...) and every payload decoded as text (and hex). */
function payloadTexts(node: unknown, out: { texts: string[]; encrypted: number; total: number }): void {
  if (typeof node === 'string') out.texts.push(node);
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const x of node) payloadTexts(x, out);
    return;
  }
  const o = node as Record<string, unknown>;
  if (o.data instanceof Uint8Array && o.metadata && typeof o.metadata === 'object') {
    out.total++;
    const encoding = (o.metadata as Record<string, Uint8Array | undefined>).encoding;
    const enc = encoding ? Buffer.from(encoding).toString() : '';
    if (enc.includes('encrypted')) out.encrypted++;
    out.texts.push(Buffer.from(o.data).toString('utf8'), Buffer.from(o.data).toString('hex'));
    return;
  }
  for (const v of Object.values(o)) payloadTexts(v, out);
}

/** The key stores of a localnet data directory: they hold the network's keys by design (mode 0600) and are neither kept nor scanned. */
export const LOCALNET_KEY_FILES = ['localnet-state.json', 'localnet.json'];

/**
 * Moves the files of a localnet data directory (journal, facilitator settlements), but its key
 * stores, to `dest` for the scan (ledgerDir), before the test removes the directory.
 */
export function keepLedgerFiles(dataDir: string, dest: string): void {
  if (!fs.existsSync(dataDir)) return;
  for (const f of fs.readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
    if (!f.isFile() || LOCALNET_KEY_FILES.includes(f.name)) continue;
    const from = path.join(f.parentPath, f.name);
    const to = path.join(dest, path.relative(dataDir, from));
    fs.mkdirSync(path.dirname(to), { recursive: true });
    try {
      fs.renameSync(from, to);
    } catch {
      fs.copyFileSync(from, to); // another file system
    }
  }
}

/** A journal's text with every transaction decoded from base64 (as text and as hex), and how many there were. */
function journalText(text: string): { text: string; transactions: number } {
  const parts = [text];
  let transactions = 0;
  for (const line of text.split('\n')) {
    let tx: unknown;
    try {
      tx = (JSON.parse(line) as { tx?: unknown }).tx;
    } catch {
      continue; // empty or torn line: searched as text above
    }
    if (typeof tx !== 'string') continue;
    const bytes = Buffer.from(tx, 'base64');
    parts.push(bytes.toString('utf8'), bytes.toString('hex'));
    transactions++;
  }
  return { text: parts.join('\n'), transactions };
}

export async function scanForSecrets(opts: {
  secrets: Secret[];
  logDir?: string;
  dumpFiles?: string[];
  /** files kept from localnet data directories (keepLedgerFiles), searched recursively */
  ledgerDir?: string;
  temporalAddress?: string;
  /** the namespaces to read (default: `default`) */
  namespaces?: string[];
}): Promise<ScanReport> {
  const hay = new Haystack(opts.secrets.map((s) => ({ label: s.label, needles: needlesOf(s.value) })));
  const report: ScanReport = { secrets: opts.secrets.length, logFiles: 0, logBytes: 0, databases: 0, rows: 0, workflows: 0, payloads: 0, encryptedPayloads: 0, ledgerFiles: 0, transactions: 0, found: [] };

  for (const f of opts.logDir && fs.existsSync(opts.logDir) ? fs.readdirSync(opts.logDir) : []) {
    const text = fs.readFileSync(path.join(opts.logDir!, f), 'utf8');
    report.logFiles++;
    report.logBytes += text.length;
    hay.search(text, `log ${f}`);
  }
  for (const file of opts.dumpFiles ?? []) {
    const text = fs.readFileSync(file, 'utf8');
    report.databases++;
    report.rows += text ? text.split('\n').length - 1 : 0;
    hay.search(text, `database ${path.basename(file, '.txt')}`);
  }
  for (const f of opts.ledgerDir && fs.existsSync(opts.ledgerDir) ? fs.readdirSync(opts.ledgerDir, { recursive: true, withFileTypes: true }) : []) {
    if (!f.isFile()) continue;
    const file = path.join(f.parentPath, f.name);
    const bytes = fs.readFileSync(file);
    const raw = bytes.toString('utf8');
    // A state snapshot (node:v8 format) holds message and key bytes raw: searched as text and as hex.
    const { text, transactions } = f.name.endsWith('journal.jsonl')
      ? journalText(raw)
      : { text: f.name.endsWith('.v8') ? `${raw}\n${bytes.toString('hex')}` : raw, transactions: 0 };
    report.ledgerFiles++;
    report.transactions += transactions;
    hay.search(text, `localnet ${path.relative(opts.ledgerDir!, file)}`);
  }
  if (opts.temporalAddress) {
    const connection = await Connection.connect({ address: opts.temporalAddress });
    try {
      const namespaces = opts.namespaces ?? ['default'];
      report.namespaces = namespaces.length;
      for (const namespace of namespaces) {
        const client = new Client({ connection, namespace });
        for await (const wf of client.workflow.list()) {
          const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
          report.workflows++;
          const p = { texts: [] as string[], encrypted: 0, total: 0 };
          payloadTexts(history, p);
          report.payloads += p.total;
          report.encryptedPayloads += p.encrypted;
          hay.search(p.texts.join('\n'), `workflow ${namespace === 'default' ? '' : `${namespace}/`}${wf.workflowId}`);
        }
      }
    } finally {
      await connection.close();
    }
  }
  report.found = [...hay.found].sort();
  return report;
}

/** Writes `table<TAB>row as text` for every row of every table (bytea shows as \x hex) to `out`. */
export async function dumpRows(databaseUrl: string, out: string): Promise<number> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const fd = fs.openSync(out, 'w');
  let rows = 0;
  try {
    const tables = await sql<{ schema: string; name: string }[]>`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
    for (const t of tables) {
      const q = `select t::text as row from "${t.schema.replace(/"/g, '""')}"."${t.name.replace(/"/g, '""')}" t`;
      for (const r of await sql.unsafe<{ row: string }[]>(q)) {
        fs.writeSync(fd, `${t.schema}.${t.name}\t${r.row}\n`);
        rows++;
      }
    }
  } finally {
    fs.closeSync(fd);
    await sql.end();
  }
  return rows;
}
