/**
 * The path a user takes, from the README alone: the package built and packed (`npm run build`, `npm pack`), a new
 * project outside this repository, the README's install block run line by line (the packed tarball in place of
 * `kafka-lanes`), the README's whole files written (tsconfig.json, the handler, its test, serverless.yml), `tsc`,
 * the handler's test (`vitest run`), the README's deploy command as `serverless package`, then the README's "Run it
 * locally" block: `kafka-lanes local up`, `kafka-lanes topics ensure` and `serverless offline start` against the
 * local stack, with orders produced and their outputs and dead letters read back. A wrong snippet, dependency or
 * `files` entry fails here.
 *
 * Only the topic and group names of the README's files and commands are changed (each test run has its own, checked
 * to be found), and the offline servers get free ports.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Admin } from 'kafkajs';
import { readSnippets, shellCommands, type ShellCommand, type Snippet } from '../support/doc-snippets';
import { createKafka, deleteTopics, uniqueName } from './support/stack';
import { freePort } from '../../infra/local/demo/offline-process';
import { checkReadmeDeploy } from './support/readme-deploy';

jest.setTimeout(1_200_000);

const ROOT = join(__dirname, '..', '..');
const README = readSnippets(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'README.md').snippets;

// The README's names, and this run's.
const NAMES = { group: 'orders-svc', topic: 'orders', output: 'orders-paid' } as const;
const names = { group: uniqueName('consumer-svc'), topic: uniqueName('consumer-orders'), output: uniqueName('consumer-paid') };

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

/** A command's words with the README's topic and group names replaced (`orders:3` → `<topic>:3`). */
function renamedWords(words: readonly string[]): string[] {
  return words.map((word) => {
    if (word === NAMES.group) return names.group;
    const [name, ...rest] = word.split(':');
    const mapped = name === NAMES.output ? names.output : name === NAMES.topic ? names.topic : undefined;
    return mapped === undefined ? word : [mapped, ...rest].join(':');
  });
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
      ]);
    } else if (snippet.path === 'src/orders.ts') {
      text = renamed(text, where, [[/(?<=ctx\.send\(')orders-paid(?=')/, names.output]]);
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
    await deleteTopics([names.topic, names.output, `${names.group}.retry.5s`, `${names.group}.retry.1m`, `${names.group}.retry.10m`, `${names.group}.dlq`]);
    rmSync(work, { recursive: true, force: true });
  });

  it('installs, type-checks, packages and runs under serverless offline against the local stack', async () => {
    const t0 = Date.now();
    const lap = (what: string) => console.log(`consumer path: ${what} at ${((Date.now() - t0) / 1000).toFixed(1)}s`);

    // Prepare: the package as it would be published.
    expectOk(await run('npm', ['run', 'build'], ROOT, process.env), 'npm run build');
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT, process.env);
    expectOk(packed, 'npm pack');
    const [{ filename, size, entryCount }] = JSON.parse(packed.output.slice(packed.output.indexOf('['))) as [{ filename: string; size: number; entryCount: number }];
    const tarball = join(work, filename);
    lap(`packed ${filename} (${(size / 1024).toFixed(0)} KiB, ${entryCount} files)`);

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
    for (const [path, text] of projectFiles()) {
      mkdirSync(dirname(join(project, path)), { recursive: true });
      writeFileSync(join(project, path), text);
    }

    // Assess: the README's compiler options, then strict with declarations and every library checked.
    expectOk(await run('npx', ['tsc'], project), 'npx tsc');
    expectOk(await run('npx', ['tsc', '--strict', '--declaration', '--skipLibCheck', 'false'], project), 'npx tsc --strict --declaration --skipLibCheck false');
    lap('type-checked');
    if (existsSync(join(project, 'node_modules', '.bin', 'vitest')) && [...projectFiles().keys()].some((path) => /\.test\.ts$/.test(path))) {
      expectOk(await run('npx', ['vitest', 'run'], project), 'npx vitest run');
      lap('vitest ran');
    }
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

    // 20 orders of 4 customers, one with a zero amount (refused by the handler), one failing the schema.
    const kafka = createKafka();
    admin = kafka.admin();
    await admin.connect();
    const orders = Array.from({ length: 20 }, (_, i) => ({ orderId: `o-${i}`, customerId: `c-${i % 4}`, amount: i === 7 ? 0 : 10 + i }));
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: names.topic,
      acks: -1,
      messages: [
        ...orders.map((order) => ({ key: order.customerId, value: JSON.stringify(order) })),
        { key: 'c-0', value: JSON.stringify({ orderId: 'o-bad', amount: 'ten' }) },
      ],
    });
    await producer.disconnect();

    // Assess: an output per good order on the output topic, two dead letters, and a clean stop.
    const paid = new Map<string, string>();
    const consumer = kafka.consumer({ groupId: uniqueName('consumer-path-reader') });
    await consumer.connect();
    await consumer.subscribe({ topic: names.output, fromBeginning: true });
    const allPaid = new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          const value = JSON.parse(message.value!.toString()) as { orderId: string; paymentId: string };
          paid.set(value.orderId, value.paymentId);
          if (paid.size === 19) resolve();
        },
      });
    });
    await Promise.race([allPaid, exited.then((code) => Promise.reject(new Error(`serverless offline exited with ${code}:\n${output.join('').slice(-6_000)}`)))]);
    await consumer.disconnect();
    expect([...paid.keys()].sort()).toEqual(orders.filter((order) => order.amount > 0).map((order) => order.orderId).sort());
    for (;;) {
      const dead = (await admin.fetchTopicOffsets(`${names.group}.dlq`)).reduce((n, partition) => n + Number(partition.high), 0);
      if (dead >= 2) {
        expect(dead).toBe(2);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    lap('outputs and dead letters read');

    offline.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output.join('')).toContain('kafka-lanes offline: Kafka triggers stopped, offsets committed');
    lap('offline stopped');
  });
});
