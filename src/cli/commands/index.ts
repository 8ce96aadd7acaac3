import type { Command } from 'commander';
import { registerDashboard } from './dashboard';
import { registerDlq } from './dlq';
import { registerDoctor } from './doctor';
import { registerLane } from './lane';
import { registerLocal } from './local';
import { registerProduce } from './produce';
import { registerRecover } from './recover';
import { registerReset } from './reset';
import { registerStatus } from './status';
import { registerTopics } from './topics';

/** Adds one command (with its subcommands, options and help) to the program. */
export type RegisterCommand = (program: Command) => void;

/** Every command of the CLI: one file each in this folder, one line each here. */
export const COMMANDS: readonly RegisterCommand[] = [
  registerTopics,
  registerStatus,
  registerReset,
  registerLane,
  registerDlq,
  registerProduce,
  registerDashboard,
  registerRecover,
  registerDoctor,
  registerLocal,
];
