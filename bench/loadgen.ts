import { measure, median, type LoadGenerator } from './lib.js';

/**
 * `npm run bench -- --loadgen`: the bench's two load generators against the bare route, in
 * alternating rounds: the answers per second each gets, and the CPU time this process (the load
 * generator) spends per answer. On a machine the load generator shares with the servers, that CPU
 * is taken from them; pinned to a core of its own, it caps what any server can be seen to serve.
 */
export interface LoadgenFigures {
  lines: string[];
  rows: { generator: LoadGenerator; rps: number; cpuPerAnswer: number }[];
}

export async function runLoadgen(bareUrl: string, opts: { rounds: number; seconds: number }): Promise<LoadgenFigures> {
  const generators: LoadGenerator[] = ['sockets', 'autocannon'];
  const samples = new Map<LoadGenerator, { rps: number[]; cpu: number[] }>(
    generators.map((g) => [g, { rps: [], cpu: [] }]),
  );
  for (let round = 0; round < opts.rounds; round++) {
    const order = round % 2 === 0 ? generators : [...generators].reverse();
    for (const generator of order) {
      const before = process.cpuUsage();
      const figures = await measure({ url: `${bareUrl}/bare`, seconds: opts.seconds }, generator);
      const used = process.cpuUsage(before);
      const answers = figures.ok + figures.non2xx;
      if (figures.errors > 0 || figures.non2xx > 0 || answers === 0)
        throw new Error(`${generator}: ${figures.errors} errors, ${figures.non2xx} non-2xx of ${answers}`);
      samples.get(generator)!.rps.push(figures.rps);
      samples.get(generator)!.cpu.push((used.user + used.system) / answers);
    }
  }
  const rows = generators.map((generator) => ({
    generator,
    rps: median(samples.get(generator)!.rps),
    cpuPerAnswer: median(samples.get(generator)!.cpu),
  }));
  const [own, autocannon] = rows as [(typeof rows)[0], (typeof rows)[0]];
  return {
    rows,
    lines: [
      `load generators against the bare route: ${opts.rounds} rounds of ${opts.seconds} s each, the order alternating; medians. CPU: this process's user + system time per answer.`,
      '',
      '| load generator | bare route req/s | its CPU per answer |',
      '|---|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.generator === 'sockets' ? "the bench's own (load.ts)" : 'autocannon'} | ${Math.round(r.rps).toLocaleString('en-US')} | ${r.cpuPerAnswer.toFixed(1)} µs |`,
      ),
      '',
      `autocannon ÷ ours, CPU per answer: ${(autocannon.cpuPerAnswer / own.cpuPerAnswer).toFixed(2)}`,
    ],
  };
}
