/**
 * agent-passport: the command line over the client. Keys come from --key-file or AGENT_PRIVATE_KEY
 * (never from an argument, never printed); progress goes to stderr; --json prints the answer as one
 * JSON document on stdout for scripts. Exit code 1 on an API error (its body on stderr).
 */
import { Command, Option } from 'commander';
import { AgentPassportClient, ApiRequestError, type Query, type Tier } from './index.js';
import { clientOptionsFrom, type ConfigInput } from './config.js';

interface GlobalOptions extends ConfigInput {
  json?: boolean;
  quiet?: boolean;
}

const program = new Command('agent-passport')
  .description('Agent Passport from the command line: passports, DIDs, directory, A2A messages, marketplace tasks, trust')
  .version('0.13.0')
  .option('--url <url>', 'API base URL (env AGENT_PASSPORT_URL; default: apiUrl of the deployment file, else http://127.0.0.1:3000)')
  .option('--key-file <path>', 'file holding the agent private key, or JSON {accountId, privateKey, keyType} (else env AGENT_PRIVATE_KEY)')
  .option('--account <id>', 'the agent Hedera account id (env AGENT_ACCOUNT_ID)')
  .addOption(new Option('--key-type <type>', 'key type when the key text does not say (env AGENT_KEY_TYPE)').choices(['ED25519', 'ECDSA']))
  .option('--deployment <path>', 'deployment file with topic and node ids (env LOCALNET_CONFIG_PATH; default .data/localnet.json)')
  .option('--max-wait <seconds>', 'wait out a busy service (429/503 with Retry-After or X-RateLimit-Reset) for at most this long per request, 0 never (env AGENT_PASSPORT_MAX_WAIT_S; default 60)')
  .option('--json', 'print the answer as JSON (for scripts)')
  .option('-q, --quiet', 'no progress on stderr');

function client(): { c: AgentPassportClient; g: GlobalOptions } {
  const g = program.opts<GlobalOptions>();
  const options = clientOptionsFrom(g);
  const c = new AgentPassportClient({ ...options, onProgress: g.quiet ? undefined : (line) => process.stderr.write(`${line}\n`) });
  return { c, g };
}

function print(g: GlobalOptions, result: unknown): void {
  if (g.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  if (result && typeof result === 'object' && !Array.isArray(result)) {
    for (const [k, v] of Object.entries(result)) process.stdout.write(`${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}\n`);
  } else process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

/** Wraps an action: builds the client, runs, prints. */
function act<A extends unknown[]>(fn: (c: AgentPassportClient, ...args: A) => Promise<unknown>) {
  return async (...args: A) => {
    const { c, g } = client();
    print(g, await fn(c, ...args));
  };
}

const tierOption = () => new Option('--tier <tier>', 'passport tier').choices(['bronze', 'silver', 'gold', 'platinum']);
const collect = (v: string, prev: string[] = []) => [...prev, v];

program
  .command('sign-in')
  .description('Sign a fresh challenge: prints the DID and the three X-Service-* headers (single use)')
  .action(act(async (c) => ({ did: c.did, headers: await c.signIn() })));

program
  .command('whoami')
  .description('The DID and account of the configured key')
  .action(act(async (c) => ({ did: c.did })));

const passport = program.command('passport').description('Buy, upgrade and read passports');
passport
  .command('buy')
  .description('Buy a passport: pays the tier price in HBAR over x402, waits until it is active')
  .addOption(tierOption().default('bronze'))
  .option('--endpoint <url>', "the agent's A2A endpoint")
  .action(act((c, o: { tier: Tier; endpoint?: string }) => c.buyPassport(o.tier, o.endpoint)));
passport
  .command('upgrade <tokenId> <serial>')
  .description('Upgrade a passport to a higher tier (pays the difference)')
  .addOption(tierOption().makeOptionMandatory())
  .action(act((c, tokenId: string, serial: string, o: { tier: Tier }) => c.upgradePassport(tokenId, Number(serial), o.tier)));
passport
  .command('show <accountId>')
  .description('The passports an account holds')
  .action(act((c, accountId: string) => c.passportsOf(accountId)));

program
  .command('did')
  .description('DIDs')
  .command('resolve <did>')
  .description('Resolve a DID to its DID document')
  .action(act((c, did: string) => c.resolveDid(did)));

const directory = program.command('directory').description('The agent directory');
directory
  .command('register')
  .description('Register the agent (active passport required)')
  .requiredOption('--name <name>', 'unique name, 1-64 characters')
  .requiredOption('--capability <cap>', 'a capability of the passport (repeat)', collect)
  .requiredOption('--endpoint <url>', "the agent's A2A endpoint")
  .option('--skill <skill>', 'a skill (repeat)', collect)
  .option('--description <text>')
  .action(
    act((c, o: { name: string; capability: string[]; endpoint: string; skill?: string[]; description?: string }) =>
      c.register({ name: o.name, capabilities: o.capability, endpoint: o.endpoint, skills: o.skill, description: o.description }),
    ),
  );
directory
  .command('list')
  .option('--capability <cap>')
  .action(act((c, o: { capability?: string }) => c.agents({ capability: o.capability as Query<'/agents'>['capability'] })));
program
  .command('search <query>')
  .description('Search agents and tasks')
  .action(act((c, q: string) => c.search(q)));

const messages = program.command('messages').description('A2A messages');
messages
  .command('send <toDid> <body>')
  .description('Send a message (built and signed here; your account pays the topic fee)')
  .option('--content-type <type>')
  .action(act((c, to: string, body: string, o: { contentType?: string }) => c.sendMessage(to, body, o.contentType)));
messages
  .command('inbox')
  .description('Messages received (default: your DID), newest first')
  .option('--did <did>')
  .option('--limit <n>')
  .action(act((c, o: { did?: string; limit?: string }) => c.inbox(o.did, o.limit ? { limit: Number(o.limit) } : {})));

const task = program.command('task').description('Marketplace tasks');
task
  .command('post')
  .description('Post a task (no escrow: you pay the claimer at completion)')
  .requiredOption('--title <title>')
  .requiredOption('--price <hbar>', 'price in HBAR')
  .option('--description <text>')
  .option('--capability <cap>', 'capability a claimer needs (repeat)', collect)
  .action(
    act((c, o: { title: string; price: string; description?: string; capability?: string[] }) =>
      c.postTask({ title: o.title, priceHbar: Number(o.price), description: o.description, capabilities: o.capability }),
    ),
  );
task.command('claim <taskId>').action(act((c, id: string) => c.claimTask(id)));
task
  .command('deliver <taskId>')
  .requiredOption('--result <text>', 'the result body')
  .action(act((c, id: string, o: { result: string }) => c.deliverTask(id, { resultBody: o.result })));
task
  .command('complete <taskId>')
  .description('Accept the delivery and pay the claimer (transfer signed here)')
  .action(act((c, id: string) => c.completeTask(id)));
task
  .command('cancel <taskId>')
  .option('--reason <text>')
  .action(act((c, id: string, o: { reason?: string }) => c.cancelTask(id, o.reason)));
task
  .command('show <taskId>')
  .description("One task; signed when a key is given, so its poster and claimer see the delivered result before completion")
  .option('--anonymous', 'read without signing (as anyone else sees it)')
  .action(act((c, id: string, o: { anonymous?: boolean }) => c.task(id, { signed: o.anonymous ? false : undefined })));
task
  .command('list')
  .option('--status <status>')
  .action(act((c, o: { status?: string }) => c.tasks({ status: o.status as Query<'/market/tasks'>['status'] })));

const events = program.command('events').description("The agent's own events (tasks, passports, payments, messages)");
events
  .command('watch')
  .description('Follows the events as they are recorded (long-poll), printing one line each (JSON lines with --json); Ctrl-C stops')
  .option('--after <eventId>', 'start after this event id (default: the oldest kept)')
  .action(async (o: { after?: string }) => {
    const { c, g } = client();
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    for await (const ev of c.watchEvents({ ...(o.after ? { after: o.after } : {}), signal: stop.signal })) {
      process.stdout.write(g.json ? `${JSON.stringify(ev)}\n` : `${ev.id} ${ev.timestamp} ${ev.type} ${ev.subject}\n`);
    }
  });
const webhooks = program.command('webhooks').description("The agent's webhooks (Standard Webhooks signatures)");
webhooks
  .command('add <url>')
  .description('Subscribes the URL; prints the signing secret (shown once: keep it)')
  .requiredOption('--event <type>', 'an event type to deliver (repeat), e.g. task.claimed', collect)
  .option('--capability <name>', 'also new tasks with this capability (repeat)', collect)
  .action(act((c, url: string, o: { event: string[]; capability?: string[] }) => c.addWebhook(url, o.event, o.capability)));
webhooks.command('list').action(act((c) => c.webhooks()));
webhooks
  .command('rm <id>')
  .action(act(async (c, id: string) => {
    await c.removeWebhook(id);
    return { deleted: id };
  }));
webhooks.command('deliveries <id>').description('The latest delivery attempts').action(act((c, id: string) => c.webhookDeliveries(id)));

program
  .command('trust')
  .description('Trust snapshots')
  .command('snapshot <domain>')
  .description("A domain's trust snapshot")
  .action(act((c, domain: string) => c.trustSnapshot(domain)));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof ApiRequestError) process.stderr.write(`error: ${JSON.stringify({ status: err.status, ...err.body })}\n`);
  else process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
