/**
 * Per-request logging on the fast path (issue 8, "keep the plugin chain cheap").
 *
 * - `lazyChildLogger` (Fastify's `childLoggerFactory`): a request's logger binds the request id,
 *   but pino's child is only made when the request logs something at an enabled level. Before, a
 *   pino child was built for every request (about 15 µs each) although most requests log nothing.
 * - `AccessLog` (Fastify's `logController`): one line per answer instead of Fastify's two per
 *   request. Errors and answers >= 400, and answers slower than `slowMs`, at `info` (`error` for
 *   thrown errors); other successes at `debug`. An operations decision, measured in
 *   docs/benchmarks.md: writing one line per success cost 15-30 µs per request.
 */
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** A request's logger that makes its pino child on the first line actually written. */
class LazyChildLogger {
  #child: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly ownBindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The real child, made once. */
  get real(): Logger {
    return (this.#child ??= this.parent.child(this.ownBindings, this.options));
  }

  #write(level: Level, args: unknown[]): void {
    if (this.#child === undefined && !this.parent.isLevelEnabled(level)) return;
    (this.real[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void { this.#write('fatal', args); }
  error(...args: unknown[]): void { this.#write('error', args); }
  warn(...args: unknown[]): void { this.#write('warn', args); }
  info(...args: unknown[]): void { this.#write('info', args); }
  debug(...args: unknown[]): void { this.#write('debug', args); }
  trace(...args: unknown[]): void { this.#write('trace', args); }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real.child(bindings, options);
  }
  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.parent).isLevelEnabled(level);
  }
  bindings(): Bindings {
    return this.#child ? this.#child.bindings() : { ...this.parent.bindings(), ...this.ownBindings };
  }
  get level(): string {
    return (this.#child ?? this.parent).level;
  }
  set level(level: string) {
    this.real.level = level;
  }
}

/**
 * Fastify's `childLoggerFactory`. A route with its own log level or serializers gets pino's child at
 * once (its level decides what is enabled, and none of the hot routes has one). Only for a pino
 * logger (buildApp's own), not for `logger: false`.
 */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as Logger;
  if (options.level !== undefined || options.serializers !== undefined) return parent.child(bindings, options);
  return new LazyChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}

/** One access line per answer; see the module comment for the levels. */
export class AccessLog extends LogController {
  constructor(private readonly slowMs: number) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const status = reply.statusCode;
    const elapsed = reply.elapsedTime;
    if (error) return reply.log.error({ method: request.method, url: request.url, statusCode: status, responseTime: elapsed, err: error }, 'request errored');
    const level = status >= 400 || elapsed >= this.slowMs ? 'info' : 'debug';
    if ((reply.log as Partial<Logger>).isLevelEnabled?.(level) === false) return; // no line object built for nothing
    reply.log[level]({ method: request.method, url: request.url, statusCode: status, responseTime: elapsed }, 'request completed');
  }
}
