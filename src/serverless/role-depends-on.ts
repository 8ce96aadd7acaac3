/** A resource of the compiled template, as far as this module reads it. */
interface TemplateResource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
  DependsOn?: string | string[];
}

/**
 * Drops from each Lambda function the `DependsOn` on the role its `Role` already names with `Fn::GetAtt`. The
 * framework adds one whenever a function's `role` is a logical id (as the plugin's per-function roles are), but
 * `Fn::GetAtt` is a dependency by itself: CloudFormation creates the role first either way, and `cfn-lint` flags
 * the repeat (W3005). Nothing else changes: the template deploys in the same order.
 *
 * @example
 * const resources = { Fn: { Type: 'AWS::Lambda::Function', Properties: { Role: { 'Fn::GetAtt': ['R', 'Arn'] } }, DependsOn: ['Logs', 'R'] } };
 * dropRedundantRoleDependsOn(resources); // resources.Fn.DependsOn: ['Logs']
 */
export function dropRedundantRoleDependsOn(resources: Record<string, TemplateResource>): void {
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::Lambda::Function' || resource.DependsOn === undefined) continue;
    const role = (resource.Properties['Role'] as { 'Fn::GetAtt'?: unknown } | undefined)?.['Fn::GetAtt'];
    const roleId = Array.isArray(role) ? role[0] : undefined;
    if (typeof roleId !== 'string') continue;
    const kept = (Array.isArray(resource.DependsOn) ? resource.DependsOn : [resource.DependsOn]).filter((id) => id !== roleId);
    if (kept.length === 0) delete resource.DependsOn;
    else resource.DependsOn = kept;
  }
}
