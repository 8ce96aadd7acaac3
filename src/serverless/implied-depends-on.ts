/** A resource of the compiled template, as far as this module reads it. */
interface TemplateResource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
  DependsOn?: string | string[];
}

/**
 * The properties through which the framework's resources already depend on another (`Fn::GetAtt` or `Ref`), beside a
 * `DependsOn` on the same resource the framework adds too: a function on its role (whenever its `role` is a logical id,
 * as the plugin's per-function roles are), a durable function's alias on its function.
 */
const IMPLIED: ReadonlyArray<{ readonly type: string; readonly property: string }> = [
  { type: 'AWS::Lambda::Function', property: 'Role' },
  { type: 'AWS::Lambda::Alias', property: 'FunctionName' },
];

/** The logical id a value names by `Ref` or `Fn::GetAtt`, if it is one of them. */
function named(value: unknown): string | undefined {
  const intrinsic = (value ?? {}) as { Ref?: unknown; 'Fn::GetAtt'?: unknown };
  const id = typeof intrinsic.Ref === 'string' ? intrinsic.Ref : Array.isArray(intrinsic['Fn::GetAtt']) ? intrinsic['Fn::GetAtt'][0] : undefined;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Drops each `DependsOn` that a property of the same resource already implies (`IMPLIED`): `Ref` and `Fn::GetAtt` are
 * dependencies by themselves, so CloudFormation creates the other resource first either way, and `cfn-lint` flags the
 * repeat (W3005). Nothing else changes: the template deploys in the same order.
 *
 * @example
 * const resources = { Fn: { Type: 'AWS::Lambda::Function', Properties: { Role: { 'Fn::GetAtt': ['R', 'Arn'] } }, DependsOn: ['Logs', 'R'] } };
 * dropImpliedDependsOn(resources); // resources.Fn.DependsOn: ['Logs']
 */
export function dropImpliedDependsOn(resources: Record<string, TemplateResource>): void {
  for (const resource of Object.values(resources)) {
    const rule = IMPLIED.find(({ type }) => type === resource.Type);
    if (rule === undefined || resource.DependsOn === undefined) continue;
    const implied = named(resource.Properties[rule.property]);
    if (implied === undefined) continue;
    const kept = (Array.isArray(resource.DependsOn) ? resource.DependsOn : [resource.DependsOn]).filter((id) => id !== implied);
    if (kept.length === 0) delete resource.DependsOn;
    else resource.DependsOn = kept;
  }
}
