import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { scriptSources } from '../../../src/completion/scripts';
import {
  expandIncludes,
  exportNameOf,
  generatedFiles,
  orphanModules,
  renderScriptModule,
  scriptFolders,
  scriptText,
} from '../../../infra/build/lua-modules';

const ROOT = join(__dirname, '..', '..', '..');
const folders = scriptFolders(ROOT);
const luaFiles = folders.flatMap((folder) =>
  readdirSync(folder)
    .filter((file) => file.endsWith('.lua'))
    .map((file) => join(folder, file)),
);
const libFiles = folders.flatMap((folder) =>
  existsSync(join(folder, 'lib'))
    ? readdirSync(join(folder, 'lib'))
        .filter((file) => file.endsWith('.lua'))
        .map((file) => join(folder, 'lib', file))
    : [],
);

describe('Lua scripts in the module graph', () => {
  it('finds every script in the one Redis-facing folder', () => {
    expect(folders.map((folder) => relative(ROOT, folder)).sort()).toEqual(['src/completion/scripts']);
  });

  it.each(folders.flatMap((folder) => generatedFiles(folder)).map((file) => [relative(ROOT, file.path), file.text]))(
    '%s is up to date with its .lua file (run `npm run build:scripts`)',
    (path, text) => {
      const file = join(ROOT, path);
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, 'utf8')).toBe(text);
    },
  );

  it('leaves no generated module whose .lua file is gone', () => {
    expect(folders.flatMap((folder) => orphanModules(folder))).toEqual([]);
  });

  it('includes every shared lib/ file somewhere, and its current text lands in the generated modules', () => {
    const modules = folders.flatMap((folder) => generatedFiles(folder)).map((file) => readFileSync(file.path, 'utf8'));
    expect(libFiles.length).toBeGreaterThan(0);
    for (const lib of libFiles) {
      // The generated module escapes backslashes and backticks; compare with the registered (evaluated) text.
      const text = readFileSync(lib, 'utf8').replace(/\n$/, '');
      expect({ lib: basename(lib), in: Object.values(scriptSources).some((lua) => lua.includes(text)) }).toEqual({ lib: basename(lib), in: true });
    }
    expect(modules.filter((module) => /^-- #include /m.test(module))).toEqual([]);
  });

  it('registers every .lua file once, with its current text and includes expanded', () => {
    const registered = Object.values(scriptSources);
    for (const file of luaFiles) {
      expect({ file: basename(file), count: registered.filter((lua) => lua === scriptText(file).lua).length }).toEqual({
        file: basename(file),
        count: 1,
      });
    }
    expect(registered).toHaveLength(luaFiles.length);
  });
});

describe('expandIncludes', () => {
  const files: Record<string, string> = {
    'lib/a.lua': 'local function a() return 1 end\n',
    'lib/b.lua': '-- #include lib/a.lua\nlocal function b() return a() + 1 end\n',
    'lib/loop.lua': '-- #include lib/loop.lua\n',
  };
  const read = (path: string): string => {
    const text = files[path];
    if (text === undefined) throw new Error(`no ${path}`);
    return text;
  };

  it('replaces each include line by the file, nested includes too, and lists what it took in', () => {
    const { lua, includes } = expandIncludes('local x = 1\n-- #include lib/b.lua\nreturn b()\n', read);
    expect(lua).toBe('local x = 1\nlocal function a() return 1 end\nlocal function b() return a() + 1 end\nreturn b()\n');
    expect(includes).toEqual(['lib/b.lua', 'lib/a.lua']);
  });

  it('leaves a script without includes as it is', () => {
    expect(expandIncludes('return 1\n', read)).toEqual({ lua: 'return 1\n', includes: [] });
  });

  it('refuses a cycle, a path outside lib/ and a missing file', () => {
    expect(() => expandIncludes('-- #include lib/loop.lua\n', read)).toThrow('lib/loop.lua includes lib/loop.lua: an include cycle');
    expect(() => expandIncludes('-- #include ../x.lua\n', read)).toThrow('Expected `-- #include lib/<kebab-name>.lua`, got `-- #include ../x.lua`');
    expect(() => expandIncludes('-- #include lib/none.lua\n', read)).toThrow('no lib/none.lua');
  });
});

describe('renderScriptModule', () => {
  it('keeps backslashes, backticks and ${ of the Lua text', () => {
    const lua = "local s = '\\\\n `x` ${y}'\n";
    const module = renderScriptModule('odd-name-1.lua', lua);
    const body = module.slice(module.indexOf(' = `') + 3, module.lastIndexOf('`') + 1);
    // The template literal evaluates back to the exact Lua text.
    expect(new Function(`return ${body};`)()).toBe(lua);
  });

  it('names exports after the file and refuses a name without a key count', () => {
    expect(exportNameOf('extend-lease-1.lua')).toBe('extendLease1');
    expect(() => exportNameOf('advance.lua')).toThrow('Expected a Lua script named <kebab-name>-<key count>.lua, got advance.lua');
  });
});
