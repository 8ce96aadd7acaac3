import { AssignerProtocol, type Admin } from 'kafkajs';
import { retryTopics } from '../options';
import { completionGroupId } from '../options/names';
import type { Check } from './check';

/**
 * `kafka-lanes doctor`'s "groups unique" rows: the consumer group ids a group uses (the source trigger's `<group>`,
 * one `<group>.retry.<tier>` per retry tier trigger, the committer's `<group>.lanes`) must be this group's alone.
 * A group id shared with another consumer mixes its committed offsets and members with ours: the event source
 * would start from the other consumer's offsets, a rebalance would hand our partitions to it, and `<group>.lanes`
 * (committed from outside, never joined) would stop showing this group's progress.
 */

/** One consumer group id as Kafka describes it. */
export interface GroupUse {
  /** `Empty`, `Stable`, `Dead` (no such group), ... */
  readonly state: string;
  /** `consumer` for a Kafka consumer (an event source poller is one); another protocol is another kind of client. */
  readonly protocolType: string;
  readonly members: ReadonlyArray<{
    readonly clientId: string;
    readonly clientHost: string;
    /** The topics the member subscribed to; `undefined` when its metadata is not a consumer's. */
    readonly topics: readonly string[] | undefined;
  }>;
  /** Topics the group has committed offsets for. */
  readonly committedTopics: readonly string[];
}

export interface GroupsInput {
  readonly group: string;
  /** The source topics; with none given the source group's and `<group>.lanes`' topics are not judged. */
  readonly sources: readonly string[];
  readonly tiers: readonly string[];
}

/** One group id this group uses: what it is for and the topics it may consume or commit. */
export interface OwnGroup {
  readonly id: string;
  readonly role: string;
  /** `undefined`: the topics are not known (no source topic given). */
  readonly topics: readonly string[] | undefined;
  /** `<group>.lanes` is committed from outside and never joined: any member is someone else's. */
  readonly memberless: boolean;
}

/** Pure: every consumer group id of `input.group`, with the topics each may use. */
export function ownGroups(input: GroupsInput): OwnGroup[] {
  const tiers = retryTopics(input.group, input.tiers);
  const sources = input.sources.length === 0 ? undefined : input.sources;
  return [
    { id: input.group, role: 'source trigger group', topics: sources, memberless: false },
    ...tiers.map((tier) => ({ id: tier.topic, role: `retry tier ${tier.tier} trigger group`, topics: [tier.topic], memberless: false })),
    {
      id: completionGroupId(input.group),
      role: 'completion group (committed by the committer, no members)',
      topics: sources === undefined ? undefined : [...sources, ...tiers.map((tier) => tier.topic)],
      memberless: true,
    },
  ];
}

const list = (names: readonly string[]): string => names.map((name) => `\`${name}\``).join(', ');

/**
 * Pure: one row per group id. It fails when the group has committed offsets for a topic that is not one of its own,
 * when a member subscribes to another topic or is not a Kafka consumer, and when `<group>.lanes` has any member.
 * It warns when the topics cannot be judged (no source topic given).
 */
export function groupChecks(input: GroupsInput, uses: ReadonlyMap<string, GroupUse>): Check[] {
  return ownGroups(input).map((own) => {
    const name = `group ${own.id}`;
    const use = uses.get(own.id) ?? { state: 'Dead', protocolType: '', members: [], committedTopics: [] };
    const checks = `${own.role}: checked that its committed offsets and its members' subscriptions name only ${
      own.topics === undefined ? 'its topics' : list(own.topics)
    }${own.memberless ? ', and that it has no member' : ''}`;
    const problems: string[] = [];
    if (own.topics !== undefined) {
      const foreign = use.committedTopics.filter((topic) => !own.topics?.includes(topic));
      if (foreign.length > 0) problems.push(`it has committed offsets for ${list(foreign)}`);
    }
    for (const member of use.members) {
      const who = `member \`${member.clientId}\` from ${member.clientHost}`;
      if (own.memberless) problems.push(`${who} joined it`);
      else if (use.protocolType !== 'consumer' || member.topics === undefined) problems.push(`${who} is not a Kafka consumer (protocol \`${use.protocolType}\`)`);
      else if (own.topics !== undefined) {
        const foreign = member.topics.filter((topic) => !own.topics?.includes(topic));
        if (foreign.length > 0) problems.push(`${who} subscribes to ${list(foreign)}`);
      }
    }
    if (problems.length > 0) {
      return { name, status: 'fail', detail: `${checks}; but ${problems.join('; ')}: another consumer uses this group id (group ids must be unique)` };
    }
    const seen =
      use.committedTopics.length === 0 && use.members.length === 0
        ? 'not in use yet'
        : `offsets for ${use.committedTopics.length === 0 ? 'no topic' : list(use.committedTopics)}, ${use.members.length} member(s)`;
    if (own.topics === undefined) {
      return { name, status: 'warn', detail: `${own.role}: topics not checked: give \`--topic <name>\` (or KAFKA_LANES_TOPICS); ${seen}` };
    }
    return { name, status: 'ok', detail: `${checks}: ${seen}` };
  });
}

function topicsOf(metadata: Buffer): string[] | undefined {
  try {
    return AssignerProtocol.MemberMetadata.decode(metadata)?.topics;
  } catch {
    return undefined;
  }
}

/** Describes each group id (state, members and their subscriptions) and fetches the topics it has committed. */
export async function describeGroupUse(admin: Admin, ids: readonly string[]): Promise<Map<string, GroupUse>> {
  const { groups } = await admin.describeGroups([...ids]);
  const uses = new Map<string, GroupUse>();
  for (const described of groups) {
    const committed = await admin.fetchOffsets({ groupId: described.groupId });
    uses.set(described.groupId, {
      state: described.state,
      protocolType: described.protocolType,
      members: described.members.map((member) => ({
        clientId: member.clientId,
        clientHost: member.clientHost,
        topics: described.protocolType === 'consumer' ? topicsOf(member.memberMetadata) : undefined,
      })),
      committedTopics: committed.filter((entry) => entry.partitions.some((p) => Number(p.offset) >= 0)).map((entry) => entry.topic).sort(),
    });
  }
  return uses;
}
