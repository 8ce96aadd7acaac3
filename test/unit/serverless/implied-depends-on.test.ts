import { dropImpliedDependsOn } from '../../../src/serverless/implied-depends-on';

const fn = (role: unknown, dependsOn?: string | string[]) => ({
  Type: 'AWS::Lambda::Function',
  Properties: { Role: role },
  ...(dependsOn === undefined ? {} : { DependsOn: dependsOn }),
});

describe('dropImpliedDependsOn', () => {
  it('drops the DependsOn on the role a function names with Fn::GetAtt, keeping its other dependencies', () => {
    const resources = {
      Handler: fn({ 'Fn::GetAtt': ['HandlerKafkaLanesRole', 'Arn'] }, ['HandlerLogGroup', 'HandlerKafkaLanesRole']),
      Committer: fn({ 'Fn::GetAtt': ['CommitterKafkaLanesRole', 'Arn'] }, 'CommitterKafkaLanesRole'),
    };

    dropImpliedDependsOn(resources);

    expect(resources.Handler).toEqual(fn({ 'Fn::GetAtt': ['HandlerKafkaLanesRole', 'Arn'] }, ['HandlerLogGroup']));
    expect(resources.Committer).toEqual(fn({ 'Fn::GetAtt': ['CommitterKafkaLanesRole', 'Arn'] }));
  });

  it("drops the DependsOn on the function a durable function's alias names with Ref", () => {
    const resources = {
      Alias: { Type: 'AWS::Lambda::Alias', Properties: { FunctionName: { Ref: 'RetryLambdaFunction' }, Name: 'durable' }, DependsOn: 'RetryLambdaFunction' as string | string[] },
    };

    dropImpliedDependsOn(resources);

    expect(resources.Alias).toEqual({ Type: 'AWS::Lambda::Alias', Properties: { FunctionName: { Ref: 'RetryLambdaFunction' }, Name: 'durable' } });
  });

  it('leaves a role given by ARN, Fn::Sub or import, other dependencies and other resources alone', () => {
    const resources = {
      ByArn: fn('arn:aws:iam::123456789012:role/x', ['SomeRole']),
      BySub: fn({ 'Fn::Sub': '${SomeRole.Arn}' }, 'SomeRole'),
      Mapping: { Type: 'AWS::Lambda::EventSourceMapping', Properties: { Role: { 'Fn::GetAtt': ['SomeRole', 'Arn'] } }, DependsOn: 'SomeRole' },
    };
    const before = structuredClone(resources);

    dropImpliedDependsOn(resources);

    expect(resources).toEqual(before);
  });
});
