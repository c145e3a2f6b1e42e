/**
 * The stage runner behind `npm run dev` and `npm run dev:cluster`: starts stages in order, each
 * receiving what the earlier ones exported (env and URLs), prints the URLs when all are up, and stops
 * exactly what it started, in reverse order, on Ctrl-C / SIGTERM or when a stage fails.
 *
 * What a stage starts is registered with ctx.onStop as soon as it exists, not when the stage returns:
 * a stage that fails or is interrupted half-way (the API spawned, not yet ready) is stopped too. A stop
 * request during start-up aborts ctx.signal, waits for the stage in flight to settle, then stops
 * everything. Waits inside stages have no wall-clock deadline (children.ts waitForReady): a loaded
 * machine gets the time it needs, and a child that exits or shows no sign of life fails the start.
 */
import { killAllChildren, StartupAborted } from './children.js';
import { isPortOpen } from './ports.js';

export interface StageContext {
  /** aborted on Ctrl-C / SIGTERM during start-up: end waits at once */
  signal: AbortSignal;
  /** registers how to undo something this stage started; called in reverse order of registration */
  onStop(what: string, stop: () => Promise<void>): void;
  log: (line: string) => void;
}

export interface StageResult {
  urls?: Record<string, string>;
  env?: Record<string, string>;
}

export interface Stage {
  name: string;
  start(env: Record<string, string>, ctx: StageContext): Promise<StageResult>;
}

export interface LaunchOptions {
  /** printed above the URLs: "Agent passport stack is up" */
  title: string;
  stages: Stage[];
  env: Record<string, string>;
  log?: (line: string) => void;
}

/** Fails when something already listens on the port: a readiness check would take it for ours. */
export async function assertPortFree(port: number, what: string, envName?: string): Promise<void> {
  if (await isPortOpen(port)) {
    throw new Error(`port ${port} (${what}) is already in use: stop what listens there (another launcher still running?)${envName ? ` or set ${envName}` : ''}`);
  }
}

/** Runs the stages; returns when the stack is up (it then runs until a signal stops it). */
export async function launch(o: LaunchOptions): Promise<void> {
  const log = o.log ?? ((line: string) => console.log(line));
  const stops: { what: string; stop: () => Promise<void> }[] = [];
  const abort = new AbortController();
  let inFlight: Promise<unknown> | null = null;
  let signals = 0;
  let stopping: Promise<never> | null = null;

  async function stopAll(code: number): Promise<never> {
    abort.abort();
    // the stage in flight ends quickly once aborted; what it registered is stopped below
    await inFlight?.catch(() => undefined);
    log('stopping...');
    for (const s of stops.reverse()) {
      try {
        await s.stop();
        log(`  stopped ${s.what}`);
      } catch (err) {
        log(`  ${s.what}: ${(err as Error).message}`);
      }
    }
    killAllChildren(); // anything still running from startChild (none after the stops above)
    process.exit(code);
  }
  const onSignal = () => {
    // Ctrl-C reaches npm, tsx and this process at once, so one keypress can arrive twice: only a
    // third signal means "now", and even then every child we started is killed, none left behind.
    signals++;
    if (signals === 3) {
      log('force stop: killing every child process');
      killAllChildren();
      process.exit(130);
    }
    if (signals > 1) {
      log('still stopping (press Ctrl-C again to force)...');
      return;
    }
    stopping ??= stopAll(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const env = { ...o.env };
  const urls: Record<string, string> = {};
  try {
    for (const stage of o.stages) {
      if (abort.signal.aborted) break;
      log(`[launcher] starting ${stage.name}`);
      const ctx: StageContext = {
        signal: abort.signal,
        onStop: (what, stop) => stops.push({ what, stop }),
        log: (line) => log(`[${stage.name}] ${line}`),
      };
      inFlight = stage.start(env, ctx);
      const result = (await inFlight) as StageResult;
      inFlight = null;
      Object.assign(env, result.env);
      Object.assign(urls, result.urls);
    }
  } catch (err) {
    inFlight = null;
    if (err instanceof StartupAborted || abort.signal.aborted) return void (await (stopping ?? stopAll(0)));
    log(`start-up failed: ${(err as Error).message}`);
    await (stopping ??= stopAll(1));
  }
  if (abort.signal.aborted) return void (await stopping);
  const width = Math.max(...Object.keys(urls).map((k) => k.length));
  log(`\n${o.title}:`);
  for (const [name, url] of Object.entries(urls)) log(`  ${name.padEnd(width)}  ${url}`);
  log('\nCtrl-C stops everything.');
}
