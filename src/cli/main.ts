/**
 * The `kafka-lanes` operator CLI. Each command lives in its own file under `commands/` and registers
 * itself on the program; this file only builds the program and runs it.
 *
 * @example
 * npx kafka-lanes --help          # from an installed package
 * npm run cli -- --help           # from this repository (TypeScript through tsx, src/cli/bin.ts)
 */
import { Command, CommanderError } from 'commander';
import { version } from '../../package.json';
import { COMMANDS } from './commands';

/** The program with every command registered; `exitOverride` lets tests run it without exiting. */
export function buildProgram(): Command {
  const program = new Command('kafka-lanes')
    .description('Operate kafka-lanes: topics, completion state, lanes and dead letters of a consumer group.')
    .version(version, '-V, --version', 'the version of kafka-lanes')
    .showHelpAfterError()
    .configureHelp({ sortSubcommands: true });
  for (const register of COMMANDS) register(program);
  return program;
}

/** Runs the CLI on `argv` (as `process.argv`); resolves to the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  // Subcommands copy `exitOverride` only when created after it is set: without this, `status --help`
  // would call process.exit (and end a test runner with it).
  const override = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(override);
  };
  override(program);
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    process.stderr.write(`kafka-lanes: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
