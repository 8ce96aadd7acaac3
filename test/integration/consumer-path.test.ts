/**
 * The path a user takes, from the README alone: the package built and packed (`npm run build`, `npm pack`), a new
 * project outside this repository, the README's install block run line by line (the packed tarball in place of
 * `kafka-lanes`), the tarball checked to hold the docs the README links to, the README's whole files written
 * (tsconfig.json, the handler, its test, serverless.yml) and the handler's test run (`vitest run`: it passes as
 * written, and fails naming `kafkaLanes.outputs` once the handler also sends to a topic the service does not declare),
 * `tsc`, the README's deploy command as `serverless package`, then the README's "Run it
 * locally" block: `kafka-lanes local up`, `kafka-lanes topics ensure` and `serverless offline start` against the
 * local stack, with orders produced and their outputs and dead letters read back. A wrong snippet, dependency or
 * `files` entry fails here.
 *
 * Then what an operator does with a record that keeps failing (the README's charge fails the amount 999): it is
 * retried on the tiers' delays, `kafka-lanes dlq list` shows it, `kafka-lanes status --json` shows its lane held,
 * `kafka-lanes lane release` lets the lane's next order run, and `kafka-lanes dlq replay --position` writes that one
 * dead letter back; every order is produced with `kafka-lanes produce`. The project also type-checks under the
 * `moduleResolution` modes users have besides the README's `bundler`: `nodenext` and `node10` (jest with ts-jest).
 *
 * Only the topic and group names of the README's files and commands are changed (each test run has its own, checked
 * to be found), the retry tiers are shortened to 1s and 2s (the README's run 21 minutes before a dead letter) with
 * the `hold` dead-letter policy (so that a lane waits for the operator), and the offline servers get free ports.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Admin } from 'kafkajs';
import { readSnippets, shellCommands, type ShellCommand, type Snippet } from '../support/doc-snippets';
import type { GroupStatus } from '../../src/admin';
import type { DeadLetterRow } from '../../src/dashboard';
import { readHandOffHeaders } from '../../src/handoff/headers';
import { withCheckoutLock } from './support/checkout-lock';
import { createKafka, deleteTopics, uniqueName } from './support/stack';
import { freePort } from '../../infra/local/demo/offline-process';
import { checkReadmeDeploy } from './support/readme-deploy';

jest.setTimeout(1_200_000);

const ROOT = join(__dirname, '..', '..');
const README = readSnippets(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'README.md').snippets;

// The README's names, and this run's.
const NAMES = { group: 'orders-svc', topic: 'orders', output: 'orders-paid' } as const;
const names = { group: uniqueName('consumer-svc'), topic: uniqueName('consumer-orders'), output: uniqueName('consumer-paid') };
/** The README's tiers, and this run's (short, so that a record's five attempts end in seconds). */
const TIERS = { readme: '5s,1m,10m', run: '1s,2s' } as const;

// npm as a user runs it, from the local cache when it holds the package; no audit or funding requests.
const NPM_ENV = { ...process.env, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

interface Run {
  readonly code: number;
  readonly output: string;
}

function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = NPM_ENV): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
    });
  });
}

/** `result` succeeded; otherwise fails naming `what` with the end of its output. */
function expectOk(result: Run, what: string): void {
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code}:\n${result.output.slice(-6_000)}`);
}


/** The README's `sh` block holding a command that starts with `words`. */
function block(...words: string[]): ShellCommand[] {
  for (const snippet of README.filter((s) => s.lang === 'sh')) {
    const commands = shellCommands(snippet);
    if (commands.some((command) => words.every((word, i) => command.words[i] === word))) return commands;
  }
  throw new Error(`README.md: no sh block with a command starting \`${words.join(' ')}\``);
}

/** `text` with each README name replaced by this run's; every replacement listed must happen. */
function renamed(text: string, where: string, replacements: readonly [RegExp, string][]): string {
  let out = text;
  for (const [pattern, name] of replacements) {
    if (!pattern.test(out)) throw new Error(`${where}: expected ${pattern} (a name this test gives its own value), not found`);
    out = out.replace(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`), name);
  }
  return out;
}

/** A command's words with the README's topic and group names (and tiers) replaced (`orders:3` → `<topic>:3`). */
function renamedWords(words: readonly string[]): string[] {
  return words.map((word) => {
    if (word === NAMES.group) return names.group;
    if (word === TIERS.readme) return TIERS.run;
    const [name, ...rest] = word.split(':');
    const mapped = name === NAMES.output ? names.output : name === NAMES.topic ? names.topic : undefined;
    return mapped === undefined ? word : [mapped, ...rest].join(':');
  });
}

/** The files of the README's whole blocks, as the README writes them. */
function readmeFiles(): Map<string, string> {
  return new Map(README.filter((s): s is Snippet & { path: string } => s.path !== undefined).map((snippet) => [snippet.path, snippet.text]));
}

/** The files of the README's whole blocks, with the topic and group names of this run. */
function projectFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const snippet of README.filter((s): s is Snippet & { path: string } => s.path !== undefined)) {
    const where = `README.md:${snippet.line} (${snippet.path})`;
    let text = snippet.text;
    if (snippet.path === 'serverless.yml') {
      text = renamed(text, where, [
        [/(?<=^\s*topic: )orders$/m, names.topic],
        [/(?<=^\s*group: )orders-svc(?=\s|$)/m, names.group],
        [/(?<=^\s*outputs: \[)orders-paid(?=\])/m, names.output],
        [/^(\s*)retryTiers: \[5s, 1m, 10m\]$/m, `$1retryTiers: [${TIERS.run.split(',').join(', ')}]\n$1deadLetter:\n$1  policy: hold`],
      ]);
    } else if (snippet.path === 'src/orders.ts') {
      text = renamed(text, where, [[/(?<=ctx\.send\(')orders-paid(?=')/, names.output]]);
    } else if (snippet.path === 'test/orders.test.ts') {
      // The handler's output topic is renamed above: its test reads the outputs of that topic.
      text = renamed(text, where, [[/(?<=outputsTo<[^>]*>\(')orders-paid(?=')/, names.output]]);
    }
    files.set(snippet.path, text);
  }
  return files;
}

describe("the consumer's path: the README in a new project, with the packed package", () => {
  const work = mkdtempSync(join(tmpdir(), 'kafka-lanes-consumer-'));
  const project = join(work, 'shop');
  let offline: ChildProcess | undefined;
  let admin: Admin | undefined;

  afterAll(async () => {
    if (offline !== undefined && offline.exitCode === null && offline.signalCode === null) {
      offline.kill('SIGINT');
      await new Promise((resolve) => offline!.once('exit', resolve));
    }
    await admin?.disconnect();
    await deleteTopics([names.topic, names.output, ...TIERS.run.split(',').map((tier) => `${names.group}.retry.${tier}`), `${names.group}.dlq`]);
    rmSync(work, { recursive: true, force: true });
  });

  it('installs, type-checks, packages and runs under serverless offline against the local stack', async () => {
    const t0 = Date.now();
    const lap = (what: string) => console.log(`consumer path: ${what} at ${((Date.now() - t0) / 1000).toFixed(1)}s`);

    // Prepare: the package as it would be published (dist/ built and packed before another file builds it again).
    const packed = await withCheckoutLock('dist', async () => {
      expectOk(await run('npm', ['run', 'build'], ROOT, process.env), 'npm run build');
      return run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT, process.env);
    });
    expectOk(packed, 'npm pack');
    const [{ filename, size, entryCount }] = JSON.parse(packed.output.slice(packed.output.indexOf('['))) as [{ filename: string; size: number; entryCount: number }];
    const tarball = join(work, filename);
    lap(`packed ${filename} (${(size / 1024).toFixed(0)} KiB, ${entryCount} files)`);
    // The docs travel: every file the README links to is in the tarball, where its link points from the package's root.
    const inTarball = new Set((JSON.parse(packed.output.slice(packed.output.indexOf('['))) as [{ files: Array<{ path: string }> }])[0].files.map((file) => file.path));
    const linked = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/\]\(([^)\s#:]+)(?:#[^)]*)?\)/g)].map(([, target]) => target!);
    expect(linked).toContain('docs/deploy.md');
    expect(linked.filter((target) => !inTarball.has(target))).toEqual([]);

    // Act: a new project, outside the repository, and the README's install block line by line.
    mkdirSync(project);
    expectOk(await run('npm', ['init', '-y'], project), 'npm init -y');
    const install = block('npm', 'install');
    expect(install.map(({ words }) => words.slice(0, 2).join(' '))).toContain('npm pkg');
    for (const { words, line } of install) {
      const args = words.slice(1).map((word) => (words[1] === 'install' && word === 'kafka-lanes' ? tarball : word));
      expect(words[0]).toBe('npm');
      expectOk(await run('npm', args, project), `README.md:${line}: ${words.join(' ')}`);
    }
    lap('installed');
    const write = (files: ReadonlyMap<string, string>): void => {
      for (const [path, text] of files) {
        mkdirSync(dirname(join(project, path)), { recursive: true });
        writeFileSync(join(project, path), text);
      }
    };

    // The README's handler, serverless.yml and test as written: the test passes. With a second send, to a topic the
    // service does not declare, it fails naming `kafkaLanes.outputs` (testLanes reads the group's block).
    const asWritten = readmeFiles();
    write(asWritten);
    expectOk(await run('npx', ['vitest', 'run'], project), "npx vitest run (the README's files as written)");
    const handler = asWritten.get('src/orders.ts')!;
    const stray = renamed(handler, 'src/orders.ts', [
      [/^(\s*)(ctx\.send\('orders-paid', (\{[^\n]*\})\);)$/m, "$1$2\n$1ctx.send('orders-shipped', $3);"],
    ]);
    write(new Map([['src/orders.ts', stray]]));
    const refused = await run('npx', ['vitest', 'run'], project);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('Expected ctx.send to a declared output topic (kafkaLanes.outputs: `orders-paid`), got `orders-shipped`');
    lap("vitest ran the README's test: passes as written, fails naming kafkaLanes.outputs with a send to `orders-shipped`");
    write(projectFiles());

    // Assess: the README's compiler options, then strict with declarations and every library checked.
    expectOk(await run('npx', ['tsc'], project), 'npx tsc');
    expectOk(await run('npx', ['tsc', '--strict', '--declaration', '--skipLibCheck', 'false'], project), 'npx tsc --strict --declaration --skipLibCheck false');
    // The other module resolutions of users' projects: Node's own (`nodenext`), and `node10`, which jest projects with
    // ts-jest often still use (kafka-lanes' subpaths typed through `typesVersions`). Under `node10` the libraries' own
    // declarations are not checked: vitest's and zod's need a newer resolution (a jest project has no vitest).
    const modes = [
      ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', 'false'],
      ['--module', 'commonjs', '--moduleResolution', 'node10', '--esModuleInterop', '--skipLibCheck'],
    ];
    for (const mode of modes) expectOk(await run('npx', ['tsc', ...mode], project), `npx tsc ${mode.join(' ')}`);
    lap('type-checked (bundler, nodenext, node10)');
    // The README's deploy command with `package` for `deploy`: everything `deploy` does before it calls AWS
    // (`npx serverless package --stage prod`), without credentials.
    const deploy = block('npx', 'serverless', 'deploy').find(({ words }) => words[2] === 'deploy')!;
    const packageCommand = { ...deploy, words: deploy.words.map((word, i) => (i === 2 ? 'package' : word)) };
    const packageEnv = {
      ...Object.fromEntries(Object.entries(NPM_ENV).filter(([name]) => !name.startsWith('AWS_'))),
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
      AWS_CONFIG_FILE: '/nonexistent',
      AWS_EC2_METADATA_DISABLED: 'true',
    };
    const packaged = await run('npx', packageCommand.words.slice(1), project, packageEnv);
    expectOk(packaged, `README.md:${packageCommand.line} (its deploy command): ${packageCommand.words.join(' ')}`);
    expect(existsSync(join(project, '.serverless', 'cloudformation-template-update-stack.json'))).toBe(true);
    lap('packaged');
    const deployable = await checkReadmeDeploy(project, packageEnv);
    lap(`${deployable.inVpc} of ${deployable.functions} functions in the VPC, every grant; without \`vpc\` refused`);

    // Act: the README's "Run it locally" block: the local stack (already up here: it says so and starts nothing), the
    // topics, and the service under serverless offline on free ports.
    const local = block('npx', 'kafka-lanes', 'local', 'up');
    const offlineCommand = local.find(({ words }) => words[1] === 'serverless');
    if (offlineCommand === undefined) throw new Error('README.md: the "Run it locally" block runs no `npx serverless offline start`');
    for (const { words, line } of local.filter((command) => command !== offlineCommand)) {
      expectOk(await run(words[0]!, renamedWords(words).slice(1), project), `README.md:${line}: ${words.join(' ')}`);
    }
    lap('local stack and topics');
    const output: string[] = [];
    // The binary `npx serverless` runs, started directly: SIGINT then reaches serverless itself, as Ctrl-C does.
    offline = spawn(join(project, 'node_modules', '.bin', offlineCommand.words[1]!), [...offlineCommand.words.slice(2), '--httpPort', String(await freePort()), '--lambdaPort', String(await freePort())], {
      cwd: project,
      env: NPM_ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => offline!.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serverless offline did not start its triggers in 5 minutes:\n${output.join('').slice(-6_000)}`)), 300_000);
      const onData = (chunk: Buffer) => {
        output.push(chunk.toString());
        if (!/Kafka trigger\(s\) running/.test(output.join(''))) return;
        clearTimeout(timer);
        resolve();
      };
      offline!.stdout!.on('data', onData);
      offline!.stderr!.on('data', onData);
      void exited.then((code) => reject(new Error(`serverless offline exited with ${code} before its triggers ran:\n${output.join('').slice(-6_000)}`)));
    });
    lap('offline running');

    // The README's second block: an order with `kafka-lanes produce`, then `status` and `dlq list`.
    const cli = (...args: string[]) => run('npx', ['kafka-lanes', ...args], project);
    const readmeOrders = block('npx', 'kafka-lanes', 'produce');
    expect(readmeOrders.map(({ words }) => words.slice(1, 3).join(' '))).toEqual(['kafka-lanes produce', 'kafka-lanes status', 'kafka-lanes dlq']);
    for (const { words, line } of readmeOrders) expectOk(await run(words[0]!, renamedWords(words).slice(1), project), `README.md:${line}: ${words.join(' ')}`);
    const readmeOrder = JSON.parse(readmeOrders[0]!.words.at(-1)!) as { orderId: string; amount: number };

    // 20 orders of 4 customers with `kafka-lanes produce --file`: one with a zero amount (refused by the handler),
    // one the payment provider fails every time (999: retried, dead-lettered, its lane held), then one failing the schema.
    const orders = Array.from({ length: 20 }, (_, i) => ({ orderId: `order-${i}`, customerId: `c-${i % 4}`, amount: i === 6 ? 0 : i === 13 ? 999 : 10 + i }));
    const lines = [...orders.map((order) => `${order.customerId}|${JSON.stringify(order)}`), `c-9|${JSON.stringify({ orderId: 'order-bad', amount: 'ten' })}`];
    writeFileSync(join(project, 'orders.txt'), `${lines.join('\n')}\n`);
    const produced = await cli('produce', names.topic, '--file', 'orders.txt', '--key-separator', '|');
    expectOk(produced, 'npx kafka-lanes produce --file orders.txt');
    expect(produced.output).toContain(`21 record(s) written to ${names.topic} (acks=all)`);
    // Held behind their dead-lettered heads: c-2's orders after the zero amount (order-6), c-1's after order-13.
    const heldBack = new Set(['order-10', 'order-14', 'order-18', 'order-17']);
    const kafka = createKafka();
    admin = kafka.admin();
    await admin.connect();

    // Assess: an output per order paid, on the output topic; three dead letters.
    const paid = new Map<string, string>();
    let paidWanted = Number.POSITIVE_INFINITY;
    let onPaid = (): void => undefined;
    const consumer = kafka.consumer({ groupId: uniqueName('consumer-path-reader') });
    await consumer.connect();
    await consumer.subscribe({ topic: names.output, fromBeginning: true });
    void consumer.run({
      eachMessage: async ({ message }) => {
        const value = JSON.parse(message.value!.toString()) as { orderId: string; paymentId: string };
        paid.set(value.orderId, value.paymentId);
        if (paid.size >= paidWanted) onPaid();
      },
    });
    const paidCount = (count: number): Promise<void> => {
      paidWanted = count;
      const reached = paid.size >= count ? Promise.resolve() : new Promise<void>((resolve) => (onPaid = resolve));
      return Promise.race([reached, exited.then((code) => Promise.reject(new Error(`serverless offline exited with ${code}:\n${output.join('').slice(-6_000)}`)))]);
    };
    const payable = [readmeOrder.orderId, ...orders.filter((order) => order.amount > 0 && order.amount !== 999 && !heldBack.has(order.orderId)).map((order) => order.orderId)];
    await paidCount(payable.length);
    expect([...paid.keys()].sort()).toEqual(payable.sort());
    const deadLetters = async (): Promise<{ total: number; rows: DeadLetterRow[] }> => {
      const listed = await cli('dlq', 'list', names.group, '--json');
      expectOk(listed, 'npx kafka-lanes dlq list --json');
      return JSON.parse(listed.output) as { total: number; rows: DeadLetterRow[] };
    };
    let letters = await deadLetters();
    while (letters.total < 3) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      letters = await deadLetters();
    }
    expect(letters.rows.map((row) => row.reason).sort()).toEqual(['attempts-exhausted', 'non-retriable', 'schema-validation']);
    // zod/mini with the README's locale: the dead letter says what was expected, not only `Invalid input`.
    expect(letters.rows.find((row) => row.reason === 'schema-validation')?.error).toContain('expected number, received string');
    lap('outputs and dead letters read');

    // The failing charge: five attempts, each retry from the tier its delay names (1s, then 2s), then dead-lettered.
    const failing = letters.rows.find((row) => row.reason === 'attempts-exhausted')!;
    expect(failing).toMatchObject({ key: 'c-1', attempt: 5, error: 'Error: payment provider timed out', origin: { topic: names.topic } });
    const copies: Array<[string, number]> = [];
    const copyReader = kafka.consumer({ groupId: uniqueName('consumer-path-copies') });
    await copyReader.connect();
    await copyReader.subscribe({ topics: TIERS.run.split(',').map((tier) => `${names.group}.retry.${tier}`), fromBeginning: true });
    await new Promise<void>((resolve) => {
      void copyReader.run({
        eachMessage: async ({ topic, message }) => {
          const facts = readHandOffHeaders(message.headers ?? {});
          if (facts.originOffset !== failing.origin.offset || facts.originPartition !== failing.origin.partition) return;
          copies.push([topic.slice(names.group.length + 1), facts.attempt!]);
          if (copies.length === 4) resolve();
        },
      });
    });
    await copyReader.disconnect();
    expect(copies.sort((a, b) => a[1] - b[1])).toEqual([
      ['retry.1s', 2],
      ['retry.2s', 3],
      ['retry.2s', 4],
      ['retry.2s', 5],
    ]);
    lap('retried on the tiers, dead-lettered, listed');

    // `status --json` shows the held lane of c-1 with its next order parked; `lane release` lets that order run (the
    // operator commands find the group's tiers in its retry topics, as a user who changed `retryTiers` needs).
    const status = await cli('status', names.group, '--json');
    expectOk(status, 'npx kafka-lanes status --json');
    const held = (JSON.parse(status.output) as GroupStatus).lanes?.lanes.find((lane) => lane.key === 'c-1');
    expect(held).toMatchObject({ state: 'held', topic: names.topic, partition: failing.origin.partition, headOffset: failing.origin.offset, attempt: 5, parked: 1 });
    expectOk(await cli('lane', 'release', names.group, held!.topic, String(held!.partition), held!.lane), 'npx kafka-lanes lane release');
    await paidCount(payable.length + 1);
    expect(paid.has('order-17')).toBe(true);
    lap('lane released, its next order paid');

    // That one dead letter, replayed by its position: a dry run changes nothing, then it is written back.
    const position = `${failing.partition}@${failing.offset}`;
    const ends = async (): Promise<number> => (await admin!.fetchTopicOffsets(names.topic)).reduce((n, p) => n + Number(p.high), 0);
    const before = await ends();
    const dry = await cli('dlq', 'replay', names.group, '--position', position, '--dry-run');
    expectOk(dry, 'npx kafka-lanes dlq replay --dry-run');
    expect(dry.output).toContain('would be written back');
    expect(await ends()).toBe(before);
    const replay = await cli('dlq', 'replay', names.group, '--position', position);
    expectOk(replay, 'npx kafka-lanes dlq replay --position');
    expect(replay.output).toContain(`written-back: written back to ${names.topic}`);
    expect(await ends()).toBe(before + 1);
    await consumer.disconnect();
    lap('the dead letter replayed');

    offline.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output.join('')).toContain('kafka-lanes offline: Kafka triggers stopped, offsets committed');
    lap('offline stopped');

    // What the tools left in the project is the user's own files, or listed in the README's `.gitignore` line.
    const gitignore = block('printf').find(({ words }) => words[0] === 'printf')!;
    const expectedIgnored = gitignore.words.slice(2, gitignore.words.indexOf('>>'));
    expect(gitignore.words.slice(-2)).toEqual(['>>', '.gitignore']);
    const own = new Set(['package.json', 'package-lock.json', 'orders.txt', ...[...readmeFiles().keys()].map((path) => path.split('/')[0]!)]);
    const left = readdirSync(project, { withFileTypes: true }).filter((entry) => !own.has(entry.name)).map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
    expect(left).toContain('dist-lambda/');
    expect(left.filter((entry) => !expectedIgnored.includes(entry))).toEqual([]);
  });
});
