import { deployedEnvironment, withDeployedEnvironment } from '../../../src/cli/env-file';

describe('deployedEnvironment', () => {
  it('reads the Environment.Variables of `aws lambda get-function-configuration`, keeping only KAFKA_LANES_* variables', () => {
    const text = JSON.stringify({
      FunctionName: 'orders-prod-process',
      Environment: { Variables: { KAFKA_LANES_GROUP: 'orders-prod', KAFKA_LANES_RETRY_TIERS: '5s,1m', NODE_OPTIONS: '--enable-source-maps' } },
    });

    expect(deployedEnvironment(text, 'fn.json')).toEqual({ KAFKA_LANES_GROUP: 'orders-prod', KAFKA_LANES_RETRY_TIERS: '5s,1m' });
  });

  it('reads a flat JSON object and NAME=value lines alike', () => {
    expect(deployedEnvironment('{"KAFKA_LANES_BROKERS":"b-1:9098","OTHER":"x"}', 'env.json')).toEqual({ KAFKA_LANES_BROKERS: 'b-1:9098' });
    expect(deployedEnvironment('# prod\nKAFKA_LANES_BROKERS=b-1:9098,b-2:9098\nKAFKA_LANES_REDIS_TLS="true"\nPATH=/bin\n', '.env')).toEqual({
      KAFKA_LANES_BROKERS: 'b-1:9098,b-2:9098',
      KAFKA_LANES_REDIS_TLS: 'true',
    });
  });

  it('refuses a file without any KAFKA_LANES_* variable, naming it and the shapes it reads', () => {
    expect(() => deployedEnvironment('{"Environment":{"Variables":{}}}', 'fn.json')).toThrow(
      'Expected KAFKA_LANES_* variables in fn.json (the JSON of `aws lambda get-function-configuration`, a JSON object or NAME=value lines), found none',
    );
    expect(() => deployedEnvironment('{"KAFKA_LANES_GROUP": ', 'fn.json')).toThrow(/^Expected JSON in fn.json \(it starts with `\{`\), got: /);
  });
});

describe('withDeployedEnvironment', () => {
  it('replaces the shell\'s KAFKA_LANES_* variables by the deployed ones and keeps the rest', () => {
    const shell = { KAFKA_LANES_BROKERS: '127.0.0.1:9092', KAFKA_LANES_REDIS_TLS: 'true', AWS_REGION: 'eu-west-1' };

    expect(withDeployedEnvironment(shell, { KAFKA_LANES_BROKERS: 'b-1:9098' })).toEqual({ AWS_REGION: 'eu-west-1', KAFKA_LANES_BROKERS: 'b-1:9098' });
  });
});
