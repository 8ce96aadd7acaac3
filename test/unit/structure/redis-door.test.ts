/**
 * "No Redis client outside `completion/` and `connections/`" (docs/ARCHITECTURE.md, "Folders"): `connections/` makes a
 * client and hands it to the completion store, the door every other folder is given; the store opens the other doors
 * on its connection (committer state, group state, a partition's rebuild, the exactly-once store, the server) and
 * closes it, and no door hands its client out. A file that breaks the rule is named here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { CLIENT_TYPES, SRC, namesClient, sourceFiles } from './source-tree';

const parsed = sourceFiles().map((file) => ({ file, source: ts.createSourceFile(file, readFileSync(join(SRC, file), 'utf8'), ts.ScriptTarget.ES2022, true) }));

/** Where a client may be named: the Redis state's folder, and where connections are made. */
const DOOR_FOLDERS = /^(completion|connections)\//;


/** The names that are a client or hand one out (the ioredis module, our alias, the functions that make one). */
const CLIENT_NAMES = new Set([...CLIENT_TYPES, 'createRedis', 'connectRedis', 'importIoRedis', 'IoRedisModule']);

/** How a file reaches a client: an import of ioredis, an import of a client's name, a value declared with a client type. */
function clientUses(source: ts.SourceFile): string[] {
  const uses: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (node.moduleSpecifier.text === 'ioredis') uses.push(`imports ioredis`);
      const bindings = node.importClause?.namedBindings;
      if (bindings !== undefined && ts.isNamedImports(bindings)) {
        for (const element of bindings.elements) {
          const name = (element.propertyName ?? element.name).text;
          if (CLIENT_NAMES.has(name) && node.moduleSpecifier.text !== 'ioredis') uses.push(`imports ${name}`);
        }
      }
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [specifier] = node.arguments;
      if (specifier !== undefined && ts.isStringLiteral(specifier) && specifier.text === 'ioredis') uses.push('imports ioredis');
    }
    if ((ts.isParameter(node) || ts.isPropertySignature(node) || ts.isPropertyDeclaration(node) || ts.isVariableDeclaration(node)) &&
      node.type !== undefined && namesClient(node.type)) {
      uses.push(`declares ${node.name.getText(source)} as a client`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

/** The members of completion/'s classes that hand a client out: a property or accessor others can read, typed as one. */
function exposedClients(source: ts.SourceFile): string[] {
  const exposed: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node)) {
      for (const member of node.members) {
        const hidden = member.name !== undefined && ts.isPrivateIdentifier(member.name) ||
          (ts.canHaveModifiers(member) && (ts.getModifiers(member) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword));
        if (hidden || member.name === undefined) continue;
        const type = ts.isPropertyDeclaration(member) || ts.isGetAccessorDeclaration(member) || ts.isMethodDeclaration(member) ? member.type : undefined;
        if (type !== undefined && namesClient(type)) exposed.push(`${node.name?.text ?? 'a class'}.${member.name.getText(source)}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return exposed;
}

describe('the Redis doors', () => {
  it('finds what it checks (a check that saw nothing would pass every tree)', () => {
    const uses = new Map(parsed.map(({ file, source }) => [file, clientUses(source)]));
    expect(uses.get('connections/redis.ts')).toEqual(expect.arrayContaining(['imports ioredis']));
    expect(uses.get('completion/store.ts')).toEqual(expect.arrayContaining(['imports RedisClient']));
    const probe = ts.createSourceFile('probe.ts', 'class Door { readonly redis: RedisClient; }', ts.ScriptTarget.ES2022, true);
    expect(exposedClients(probe)).toEqual(['Door.redis']);
  });

  it('"no Redis client outside completion/ and connections/": the files elsewhere that import, name or hold one', () => {
    const outside = parsed
      .filter(({ file }) => !DOOR_FOLDERS.test(file))
      .flatMap(({ file, source }) => clientUses(source).map((use) => `${file}: ${use}`));
    expect(outside).toEqual([]);
  });

  it('"none exposes its client": the doors of completion/ keep their client private (`close()` instead)', () => {
    const exposed = parsed.filter(({ file }) => file.startsWith('completion/')).flatMap(({ source }) => exposedClients(source));
    expect(exposed).toEqual([]);
  });
});
