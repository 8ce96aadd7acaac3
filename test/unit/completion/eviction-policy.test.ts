import { evictionProblem, policyOfInfo } from '../../../src/completion/redis-server';

describe('the maxmemory-policy check', () => {
  it.each(['allkeys-lru', 'allkeys-lfu', 'allkeys-random'])('refuses %s, naming it and what to set instead', (policy) => {
    expect(evictionProblem(policy)).toMatch(new RegExp(`^Expected Redis \`maxmemory-policy\` to be \`noeviction\`.*got \`${policy}\`.*Set \`maxmemory-policy noeviction\``));
  });

  it.each(['noeviction', 'volatile-lru', 'volatile-ttl', undefined])('lets %s through: it never evicts keys without a TTL', (policy) => {
    expect(evictionProblem(policy)).toBeUndefined();
  });

  it('reads the policy from INFO memory, as ElastiCache answers it where CONFIG is refused', () => {
    const info = '# Memory\r\nused_memory:1048576\r\nmaxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\nallocator_frag_ratio:1.01\r\n';
    expect(policyOfInfo(info)).toBe('allkeys-lru');
    expect(policyOfInfo('# Memory\r\nused_memory:1\r\n')).toBeUndefined();
  });
});
