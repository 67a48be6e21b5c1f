import { collectDefaultMetrics, Registry, type Metric } from 'prom-client';

/**
 * Prometheus metrics for the HTTP layer.
 *
 * Every request passes through here, and the authenticated GET is benchmarked, so the request path
 * only bumps numbers in objects built when the routes are mounted: no label objects, no label
 * hashing, no strings built per request. prom-client renders the text format at scrape time from
 * those numbers (a small `Metric`-shaped view per family, registered on a prom-client Registry
 * beside its default process metrics).
 *
 * Labels hold only bounded, non-identifying values: the method, the route TEMPLATE as declared
 * (`/v1/auth/sessions/{session_id}`, never the path a client sent), the status, a problem `code`
 * from the fixed catalogue. No account id, address, token or path id can reach a label.
 */

/** Latency buckets, in seconds: a fast in-process answer to a slow argon2 sign-in. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;

/** The label for requests no route matched (404 and 405 answers), so a scanned path is never a label. */
export const UNMATCHED = 'unmatched';

/** What a sign-in answer means, by status: a session opened, a second factor asked for, or refused. */
function signInOutcome(status: number): 'session' | 'challenge' | 'refused' | null {
  if (status === 200) return 'session';
  if (status === 202) return 'challenge';
  if (status >= 400 && status < 500) return 'refused';
  return null;
}

/** Counters and latency histogram of one route, bumped in place. */
export class RouteStats {
  /** Requests by status; statuses are few per route, so the map stays tiny. */
  readonly byStatus = new Map<number, number>();
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length);
  sum = 0;
  count = 0;
  /** Sign-in routes only: answers by outcome. */
  readonly signIns: Map<string, number> | null;

  constructor(
    readonly method: string,
    readonly route: string,
    signIn: boolean,
  ) {
    this.signIns = signIn ? new Map() : null;
  }

  record(status: number, seconds: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    this.count++;
    this.sum += seconds;
    const buckets = this.buckets;
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= LATENCY_BUCKETS[i]!) {
        buckets[i]!++;
        break;
      }
    }
    if (this.signIns !== null) {
      const outcome = signInOutcome(status);
      if (outcome !== null) this.signIns.set(outcome, (this.signIns.get(outcome) ?? 0) + 1);
    }
  }
}

interface Sample {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName?: string;
}

/** The slice of prom-client's Metric that its Registry reads when rendering. */
class View {
  readonly aggregator = 'sum';
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram' | 'gauge',
    private readonly samples: () => Sample[],
  ) {}
  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.samples() };
  }
}

let processRegistry: Registry | null = null;
/** Process metrics (CPU, memory, event loop, GC), collected once per process however many apps it builds. */
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'strongroom_' });
  }
  return processRegistry;
}

/** Sign-in operations: every POST under /v1/auth/login (password, second factor, recovery, OIDC). */
function isSignIn(method: string, template: string): boolean {
  return method === 'POST' && (template === '/v1/auth/login' || template.startsWith('/v1/auth/login/'));
}

/** One app's metrics. Cheap to build; each test server gets its own. */
export class HttpMetrics {
  readonly #routes = new Map<string, RouteStats>();
  readonly #refusals = new Map<string, number>();
  #databaseErrors = 0;
  readonly unmatched = new RouteStats('', UNMATCHED, false);
  readonly #registry = new Registry();
  /** Set in a worker of SVC_WORKERS: a scrape is answered with every worker's metrics, aggregated by the primary. */
  #scrape: (() => Promise<string>) | null = null;

  constructor() {
    const r = this.#registry;
    const all = () => [...this.#routes.values(), this.unmatched];
    r.registerMetric(
      new View(
        'strongroom_http_requests_total',
        'HTTP requests answered, by method, route template and status.',
        'counter',
        () =>
          all().flatMap((s) =>
            [...s.byStatus].map(([status, value]) => ({ labels: { method: s.method, route: s.route, status }, value })),
          ),
      ) as unknown as Metric,
    );
    r.registerMetric(
      new View(
        'strongroom_http_request_duration_seconds',
        'Time from receiving a request to its response, by method and route template.',
        'histogram',
        () =>
          all()
            .filter((s) => s.count > 0)
            .flatMap((s) => {
              const labels = { method: s.method, route: s.route };
              const out: Sample[] = [];
              let cumulative = 0;
              LATENCY_BUCKETS.forEach((le, i) => {
                cumulative += s.buckets[i]!;
                out.push({
                  metricName: 'strongroom_http_request_duration_seconds_bucket',
                  labels: { ...labels, le },
                  value: cumulative,
                });
              });
              out.push({
                metricName: 'strongroom_http_request_duration_seconds_bucket',
                labels: { ...labels, le: '+Inf' },
                value: s.count,
              });
              out.push({ metricName: 'strongroom_http_request_duration_seconds_sum', labels, value: s.sum });
              out.push({ metricName: 'strongroom_http_request_duration_seconds_count', labels, value: s.count });
              return out;
            }),
      ) as unknown as Metric,
    );
    r.registerMetric(
      new View(
        'strongroom_sign_ins_total',
        'Sign-in answers by route template and outcome (session, challenge, refused).',
        'counter',
        () =>
          all().flatMap((s) =>
            [...(s.signIns ?? [])].map(([outcome, value]) => ({ labels: { route: s.route, outcome }, value })),
          ),
      ) as unknown as Metric,
    );
    r.registerMetric(
      new View('strongroom_refusals_total', 'Problem answers by their stable code.', 'counter', () =>
        [...this.#refusals].map(([code, value]) => ({ labels: { code }, value })),
      ) as unknown as Metric,
    );
    r.registerMetric(
      new View(
        'strongroom_database_errors_total',
        'Requests and readiness probes that found the database unavailable.',
        'counter',
        () => [{ labels: {}, value: this.#databaseErrors }],
      ) as unknown as Metric,
    );
  }

  /**
   * A metric read at scrape time from outside the HTTP layer (the backup schedule). Its samples
   * carry no account id, address, token or path.
   */
  watch(
    name: string,
    help: string,
    type: 'counter' | 'gauge',
    samples: () => { labels: Record<string, string>; value: number }[],
  ): void {
    this.#registry.registerMetric(new View(name, help, type, samples) as unknown as Metric);
  }

  /** The stats of a declared route, created when routes mount. `template` is in Hono syntax. */
  statsFor(method: string, template: string): RouteStats {
    const key = `${method} ${template}`;
    let stats = this.#routes.get(key);
    if (stats === undefined) {
      const route = template.replace(/:([A-Za-z_]+)/g, '{$1}');
      stats = new RouteStats(method, route, isSignIn(method, template));
      this.#routes.set(key, stats);
    }
    return stats;
  }

  /** The stats of a request Hono matched to `template`, or of unmatched requests. HEAD counts as GET. */
  lookup(method: string, template: string | undefined): RouteStats {
    if (template === undefined) return this.unmatched;
    return this.#routes.get(`${method === 'HEAD' ? 'GET' : method} ${template}`) ?? this.unmatched;
  }

  /** A problem answer, by code. Codes come from the fixed catalogue, never from input. */
  refused(code: string): void {
    this.#refusals.set(code, (this.#refusals.get(code) ?? 0) + 1);
  }

  databaseError(): void {
    this.#databaseErrors++;
  }

  get contentType(): string {
    return this.#registry.contentType;
  }

  /** What this process reports: this app's metrics, then the process's. */
  registries(): Registry[] {
    return [this.#registry, processMetrics()];
  }

  /** From now on a scrape answers with `scrape` (every worker's metrics) instead of this process's alone. */
  answerFor(scrape: () => Promise<string>): void {
    this.#scrape = scrape;
  }

  /** The exposition text: this process's metrics, or with SVC_WORKERS every worker's. */
  async render(): Promise<string> {
    if (this.#scrape !== null) return this.#scrape();
    return Registry.merge(this.registries()).metrics();
  }
}
