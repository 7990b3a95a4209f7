import type { JsonObjectSchema } from "../../catalog/tool.js";
import { defineEnvironment, type ToolContext, type ToolImplementation } from "../define.js";

/**
 * A BFCL-style file system (the Berkeley Function Calling Leaderboard's GorillaFileSystem, Apache-2.0):
 * one tree of directories and text files, a current directory, and shell-like commands that act only on
 * names inside the current directory. Function and argument names follow BFCL's multi-turn function docs.
 */

interface FileNode {
  type: "file";
  content: string;
  /** When the content was last written (ISO 8601, from the injected clock). */
  modified_at: string;
}

interface DirectoryNode {
  type: "directory";
  contents: Record<string, Entry>;
}

type Entry = FileNode | DirectoryNode;

export interface FileSystemState {
  /** The top directory; BFCL names it after the scenario (here "alex"), and pwd shows that name. */
  root: DirectoryNode & { name: string };
  /** The current directory as pwd prints it, e.g. "/alex/workspace". */
  cwd: string;
}

type Context = ToolContext<FileSystemState>;

// ---- BFCL parameter dialect -> JSON Schema -------------------------------------------------------------

/** A parameter as BFCL's function docs write it: "dict", "float", "tuple", "any", and "None" defaults. */
interface BfclParameter {
  type: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  items?: BfclParameter;
  properties?: Record<string, BfclParameter>;
  required?: string[];
}

const BFCL_TYPES: Record<string, string | undefined> = {
  dict: "object",
  float: "number",
  double: "number",
  long: "integer",
  int: "integer",
  integer: "integer",
  tuple: "array",
  list: "array",
  array: "array",
  string: "string",
  str: "string",
  boolean: "boolean",
  bool: "boolean",
  any: undefined, // no type constraint
};

function toJsonSchema(parameter: BfclParameter): Record<string, unknown> {
  const schema: Record<string, unknown> = {};
  const type = BFCL_TYPES[parameter.type] ?? (parameter.type in BFCL_TYPES ? undefined : parameter.type);
  if (type) schema.type = type;
  if (parameter.description) schema.description = parameter.description.trim();
  if (parameter.enum) schema.enum = parameter.enum;
  // BFCL writes an absent optional argument as the default "None": in JSON Schema it simply has no default.
  if (parameter.default !== undefined && parameter.default !== "None") schema.default = parameter.default;
  if (parameter.items) schema.items = toJsonSchema(parameter.items);
  if (parameter.properties) {
    schema.properties = Object.fromEntries(
      Object.entries(parameter.properties).map(([name, child]) => [name, toJsonSchema(child)]),
    );
    schema.required = parameter.required ?? [];
  }
  return schema;
}

/** The object schema of a tool's arguments, from its BFCL "dict" of parameters. */
function bfclInput(properties: Record<string, BfclParameter>, required: string[] = []): JsonObjectSchema {
  const { properties: converted } = toJsonSchema({ type: "dict", properties, required });
  return { properties: converted, required };
}

// ---- Tree helpers --------------------------------------------------------------------------------------

// Characters BFCL refuses in a file or directory name (and "/": every name is local to the directory).
const INVALID_NAME = /[|/\\?%*:"<>]/;

function validName(name: string): boolean {
  return name !== "" && name !== "." && name !== ".." && !INVALID_NAME.test(name);
}

function segments(path: string): string[] {
  return path.split("/").filter((segment) => segment !== "" && segment !== ".");
}

/** The directory at a pwd-style path ("/alex/workspace"), or undefined. */
function directoryAt(state: FileSystemState, path: string): DirectoryNode | undefined {
  const [top, ...rest] = segments(path);
  if (top !== state.root.name) return undefined;
  let directory: DirectoryNode = state.root;
  for (const name of rest) {
    const next = directory.contents[name];
    if (next?.type !== "directory") return undefined;
    directory = next;
  }
  return directory;
}

function current(state: FileSystemState): DirectoryNode {
  // The cwd always names a directory: every tool that could remove it only removes children of it.
  return directoryAt(state, state.cwd) as DirectoryNode;
}

/**
 * Resolves a path as pwd would print it: absolute ("/", "/alex/docs", or "/docs" from the top) or relative
 * to the cwd, with "." and "..". Returns the pwd-style path of the directory, or undefined.
 */
function resolveDirectory(state: FileSystemState, path: string): string | undefined {
  let parts: string[];
  if (path.startsWith("/")) {
    const [first, ...rest] = segments(path);
    parts = [
      state.root.name,
      ...(first === state.root.name ? rest : first === undefined ? [] : [first, ...rest]),
    ];
  } else {
    parts = segments(state.cwd);
    for (const part of segments(path)) {
      if (part === "..") {
        if (parts.length <= 1) return undefined;
        parts.pop();
      } else parts.push(part);
    }
  }
  const resolved = `/${parts.join("/")}`;
  return directoryAt(state, resolved) ? resolved : undefined;
}

/** A file in the current directory, or a shell-like failure. */
function localFile(context: Context, command: string, name: string): FileNode {
  const entry = current(context.state).contents[name];
  if (!entry) return context.fail(`${command}: ${name}: No such file or directory`);
  if (entry.type === "directory") return context.fail(`${command}: ${name}: Is a directory`);
  return entry;
}

/** Python's str.splitlines(): no empty last line for a trailing newline. */
function lines(content: string): string[] {
  if (content === "") return [];
  const split = content.split(/\r\n|\r|\n/);
  if (split.at(-1) === "") split.pop();
  return split;
}

/** A deep copy of an entry whose files are stamped as newly written (cp does not keep times). */
function copyOf(entry: Entry, now: string): Entry {
  if (entry.type === "file") return { type: "file", content: entry.content, modified_at: now };
  return {
    type: "directory",
    contents: Object.fromEntries(
      Object.entries(entry.contents).map(([name, child]) => [name, copyOf(child, now)]),
    ),
  };
}

function sizeOf(entry: Entry): number {
  if (entry.type === "file") return new TextEncoder().encode(entry.content).length;
  return Object.values(entry.contents).reduce((total, child) => total + sizeOf(child), 0);
}

function sortedNames(directory: DirectoryNode): string[] {
  return Object.keys(directory.contents).sort();
}

// ---- Initial state -------------------------------------------------------------------------------------

function file(content: string, modified_at: string): FileNode {
  return { type: "file", content, modified_at };
}

function directory(contents: Record<string, Entry> = {}): DirectoryNode {
  return { type: "directory", contents };
}

/** A user's home in the spirit of BFCL's scenarios: nested project folders, hidden files, real text. */
const INITIAL_STATE: FileSystemState = {
  root: {
    name: "alex",
    type: "directory",
    contents: {
      ".bashrc": file("export EDITOR=vim\nalias ll='ls -la'\n", "2024-09-02T08:15:00.000Z"),
      "todo.txt": file(
        "Renew passport\nBook dentist appointment\nSubmit quarterly report\n",
        "2024-11-28T19:40:00.000Z",
      ),
      workspace: directory({
        ".env": file(
          "DATABASE_URL=postgres://localhost:5432/inventory\nDEBUG=false\n",
          "2024-10-01T09:00:00.000Z",
        ),
        "log.txt": file(
          [
            "2024-11-30 09:12:01 INFO server started on port 8080",
            "2024-11-30 09:13:44 WARN slow query on orders (1.8s)",
            "2024-11-30 09:15:02 ERROR payment gateway timeout",
            "2024-11-30 09:15:09 INFO retrying payment gateway",
            "2024-11-30 09:15:11 ERROR payment gateway timeout",
            "2024-11-30 09:20:00 INFO nightly backup finished",
            "",
          ].join("\n"),
          "2024-11-30T09:20:00.000Z",
        ),
        "notes.md": file(
          "# Inventory service\n\n- migrate orders table\n- add retry budget to payment client\n",
          "2024-11-29T16:05:00.000Z",
        ),
        archive: directory(),
        reports: directory({
          "q1_summary.txt": file(
            "Revenue: 120000\nCosts: 95000\nMargin: 20.8%\n",
            "2024-04-05T10:00:00.000Z",
          ),
          "q2_summary.txt": file(
            "Revenue: 134000\nCosts: 99000\nMargin: 26.1%\n",
            "2024-07-04T10:00:00.000Z",
          ),
        }),
      }),
      documents: directory({
        "budget_2024.csv": file(
          "category,planned,spent\nrent,18000,18000\ntravel,4000,5150\ntraining,2500,900\n",
          "2024-12-01T12:00:00.000Z",
        ),
        "meeting_notes.txt": file(
          "Budget review moved to Friday.\nTravel is over budget by 1150.\nAction: Alex to update the forecast.\n",
          "2024-11-27T15:30:00.000Z",
        ),
        drafts: directory({
          "proposal_v1.txt": file(
            "Proposal: move backups to object storage.\nEstimated saving: 30%.\n",
            "2024-11-20T11:00:00.000Z",
          ),
        }),
      }),
    },
  },
  cwd: "/alex",
};

// ---- Tools ---------------------------------------------------------------------------------------------

type Tool = ToolImplementation<FileSystemState>;

const tools: Record<string, Tool> = {
  pwd: {
    description: "Return the current working directory path.",
    effect: "read",
    input: bfclInput({}),
    run: ({ state }) => ({ current_working_directory: state.cwd }),
  },

  ls: {
    description: "List the contents of the current directory (sorted by name).",
    effect: "read",
    input: bfclInput({
      a: {
        type: "boolean",
        description: "Show hidden files and directories (names starting with '.').",
        default: false,
      },
    }),
    run: ({ state, args }) => ({
      current_directory_content: sortedNames(current(state)).filter(
        (name) => args.a === true || !name.startsWith("."),
      ),
    }),
  },

  cd: {
    description:
      "Change the current working directory to a folder of the current one, '..' (the parent) or '/' (the top). " +
      "One folder at a time.",
    effect: "write",
    input: bfclInput({ folder: { type: "string", description: "The folder to change to." } }, ["folder"]),
    run: ({ state, args, fail }) => {
      const folder = (args.folder as string).replace(/\/+$/, "") || "/";
      if (!["/", ".", ".."].includes(folder) && folder.includes("/"))
        fail(`cd: ${folder}: Unsupported path. Only one folder level at a time is supported.`);
      let target: string;
      if (folder === "/") target = `/${state.root.name}`;
      else if (folder === ".") target = state.cwd;
      else if (folder === "..") {
        const parts = segments(state.cwd);
        if (parts.length <= 1) fail("cd: ..: Current directory is already the root. Cannot go back.");
        target = `/${parts.slice(0, -1).join("/")}`;
      } else {
        const entry = current(state).contents[folder];
        if (!entry) return fail(`cd: ${folder}: No such file or directory`);
        if (entry.type !== "directory") return fail(`cd: ${folder}: Not a directory`);
        target = `${state.cwd}/${folder}`;
      }
      state.cwd = target;
      return { current_working_directory: target };
    },
  },

  mkdir: {
    description: "Create a new directory in the current directory.",
    effect: "write",
    input: bfclInput(
      { dir_name: { type: "string", description: "The name of the new directory (no path)." } },
      ["dir_name"],
    ),
    run: ({ state, args, fail }) => {
      const name = args.dir_name as string;
      const here = current(state);
      if (name === "." || name === ".." || here.contents[name])
        fail(`mkdir: cannot create directory '${name}': File exists`);
      if (!validName(name)) fail(`mkdir: cannot create directory '${name}': Invalid character`);
      here.contents[name] = directory();
      return {};
    },
  },

  touch: {
    description: "Create a new empty file in the current directory.",
    effect: "write",
    input: bfclInput({ file_name: { type: "string", description: "The name of the new file (no path)." } }, [
      "file_name",
    ]),
    run: ({ state, args, fail, now }) => {
      const name = args.file_name as string;
      if (!validName(name)) fail(`touch: cannot touch '${name}': Invalid character`);
      const here = current(state);
      // As in BFCL, touch only creates: an existing name is an error rather than a time update.
      if (here.contents[name]) fail(`touch: cannot touch '${name}': File exists`);
      here.contents[name] = file("", now());
      return {};
    },
  },

  echo: {
    description:
      "Write content to an existing file of the current directory (replacing what it held), or, without a " +
      "file name, display it in the terminal.",
    effect: "write",
    input: bfclInput(
      {
        content: { type: "string", description: "The content to write or display." },
        file_name: {
          type: "string",
          description: "The file of the current directory to write to. Omit it to display the content.",
          default: "None",
        },
      },
      ["content"],
    ),
    run: ({ state, args, fail, now }) => {
      const content = args.content as string;
      const name = args.file_name as string | undefined;
      if (name === undefined || name === "") return { terminal_output: content };
      if (!validName(name)) fail(`echo: cannot write to '${name}': Invalid character`);
      const entry = current(state).contents[name];
      // BFCL's echo writes only to a file that exists (create it with touch first).
      if (!entry) return fail(`echo: cannot write to '${name}': No such file`);
      if (entry.type === "directory") return fail(`echo: cannot write to '${name}': Is a directory`);
      entry.content = content;
      entry.modified_at = now();
      return { terminal_output: null };
    },
  },

  cat: {
    description: "Display the contents of a file of the current directory.",
    effect: "read",
    input: bfclInput({ file_name: { type: "string", description: "The file to display (no path)." } }, [
      "file_name",
    ]),
    run: (context) => ({ file_content: localFile(context, "cat", context.args.file_name).content }),
  },

  find: {
    description:
      "Find files and directories under a path (recursively) whose name contains a given name; without a " +
      "name, list everything under the path. Paths in the answer start with the given path.",
    effect: "read",
    input: bfclInput({
      path: { type: "string", description: "The directory to search from. Defaults to '.'.", default: "." },
      name: {
        type: "string",
        description: "The text the file or directory name must contain. Omit it to return all items.",
        default: "None",
      },
    }),
    run: ({ state, args, fail }) => {
      const path = (args.path as string | undefined) ?? ".";
      const name = args.name as string | undefined;
      const resolved = resolveDirectory(state, path);
      if (!resolved) return fail(`find: '${path}': No such file or directory`);
      const start = directoryAt(state, resolved) as DirectoryNode;
      const prefix =
        segments(path).length === 0 && path.startsWith("/") ? resolved : path.replace(/\/+$/, "");
      const matches: string[] = [];
      const walk = (directory: DirectoryNode, base: string) => {
        for (const child of sortedNames(directory)) {
          const childPath = `${base}/${child}`;
          if (name === undefined || child.includes(name)) matches.push(childPath);
          const entry = directory.contents[child] as Entry;
          if (entry.type === "directory") walk(entry, childPath);
        }
      };
      walk(start, prefix);
      return { matches };
    },
  },

  wc: {
    description: "Count the lines ('l'), words ('w') or characters ('c') of a file of the current directory.",
    effect: "read",
    input: bfclInput(
      {
        file_name: { type: "string", description: "The file to count in (no path)." },
        mode: {
          type: "string",
          description: "'l' for lines, 'w' for words, 'c' for characters.",
          default: "l",
        },
      },
      ["file_name"],
    ),
    run: (context) => {
      const mode = (context.args.mode as string | undefined) ?? "l";
      if (!["l", "w", "c"].includes(mode)) context.fail(`wc: invalid mode '${mode}'`);
      const { content } = localFile(context, "wc", context.args.file_name);
      if (mode === "l") return { count: lines(content).length, type: "lines" };
      if (mode === "w") return { count: content.split(/\s+/).filter(Boolean).length, type: "words" };
      return { count: [...content].length, type: "characters" };
    },
  },

  sort: {
    description: "Sort the lines of a file of the current directory (the file is not changed).",
    effect: "read",
    input: bfclInput({ file_name: { type: "string", description: "The file to sort (no path)." } }, [
      "file_name",
    ]),
    run: (context) => {
      const { content } = localFile(context, "sort", context.args.file_name);
      // Code-point order, as Python's sorted() on str.
      const sorted = lines(content).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return { sorted_content: sorted.join("\n") };
    },
  },

  grep: {
    description: "Return the lines of a file of the current directory that contain a pattern (plain text).",
    effect: "read",
    input: bfclInput(
      {
        file_name: { type: "string", description: "The file to search (no path)." },
        pattern: { type: "string", description: "The text to look for." },
      },
      ["file_name", "pattern"],
    ),
    run: (context) => {
      const { content } = localFile(context, "grep", context.args.file_name);
      const pattern = context.args.pattern as string;
      return { matching_lines: lines(content).filter((line) => line.includes(pattern)) };
    },
  },

  tail: {
    description: "Display the last lines of a file of the current directory (10 by default).",
    effect: "read",
    input: bfclInput(
      {
        file_name: { type: "string", description: "The file to display (no path)." },
        lines: {
          type: "integer",
          description: "How many lines from the end to show. Defaults to 10.",
          default: 10,
        },
      },
      ["file_name"],
    ),
    run: (context) => {
      const count = (context.args.lines as number | undefined) ?? 10;
      if (count < 0) context.fail(`tail: invalid number of lines: '${count}'`);
      const all = lines(localFile(context, "tail", context.args.file_name).content);
      return { last_lines: all.slice(Math.max(all.length - count, 0)).join("\n") };
    },
  },

  diff: {
    description:
      "Compare two files of the current directory line by line: each differing line appears as '- old' " +
      "and/or '+ new'.",
    effect: "read",
    input: bfclInput(
      {
        file_name1: { type: "string", description: "The first file (no path)." },
        file_name2: { type: "string", description: "The second file (no path)." },
      },
      ["file_name1", "file_name2"],
    ),
    run: (context) => {
      const first = lines(localFile(context, "diff", context.args.file_name1).content);
      const second = lines(localFile(context, "diff", context.args.file_name2).content);
      const out: string[] = [];
      for (let i = 0; i < Math.max(first.length, second.length); i++) {
        const [a, b] = [first[i], second[i]];
        if (a === b) continue;
        if (a !== undefined) out.push(`- ${a}`);
        if (b !== undefined) out.push(`+ ${b}`);
      }
      return { diff_lines: out.join("\n") };
    },
  },

  mv: {
    description:
      "Move a file or directory of the current directory into a directory of the current directory, or " +
      "rename it when the destination does not exist. No paths.",
    effect: "write",
    input: bfclInput(
      {
        source: { type: "string", description: "The file or directory to move (no path)." },
        destination: {
          type: "string",
          description: "An existing directory to move into, or the new name (no path).",
        },
      },
      ["source", "destination"],
    ),
    run: ({ state, args, fail }) => {
      const { source, destination } = args as { source: string; destination: string };
      const here = current(state);
      const item = here.contents[source];
      if (!item) return fail(`mv: cannot stat '${source}': No such file or directory`);
      if (destination.includes("/"))
        fail(
          "mv: no path allowed in destination. Only file name and folder name is supported for this operation.",
        );
      if (source === destination) fail(`mv: '${source}' and '${destination}' are the same file`);
      const target = here.contents[destination];
      if (target?.type === "directory") {
        if (target.contents[source])
          fail(`mv: cannot move '${source}' to '${destination}/${source}': File exists`);
        delete here.contents[source];
        target.contents[source] = item;
        return { result: `'${source}' moved to '${destination}/${source}'` };
      }
      // BFCL never overwrites: an existing file is not a place to move to.
      if (target) fail(`mv: cannot move '${source}' to '${destination}': File exists`);
      if (!validName(destination)) fail(`mv: cannot move '${source}' to '${destination}': Invalid character`);
      delete here.contents[source];
      here.contents[destination] = item;
      return { result: `'${source}' moved to '${destination}'` };
    },
  },

  cp: {
    description:
      "Copy a file or directory of the current directory into a directory of the current directory, or to a " +
      "new name when the destination does not exist. No paths.",
    effect: "write",
    input: bfclInput(
      {
        source: { type: "string", description: "The file or directory to copy (no path)." },
        destination: {
          type: "string",
          description: "An existing directory to copy into, or the name of the copy (no path).",
        },
      },
      ["source", "destination"],
    ),
    run: ({ state, args, fail, now }) => {
      const { source, destination } = args as { source: string; destination: string };
      const here = current(state);
      const item = here.contents[source];
      if (!item) return fail(`cp: cannot stat '${source}': No such file or directory`);
      if (destination.includes("/"))
        fail(
          "cp: don't allow path in destination. Only file name and folder name is supported for this operation.",
        );
      if (source === destination) fail(`cp: '${source}' and '${destination}' are the same file`);
      const target = here.contents[destination];
      if (target?.type === "directory") {
        if (target.contents[source])
          fail(`cp: cannot copy '${source}' to '${destination}/${source}': File exists`);
        target.contents[source] = copyOf(item, now());
        return { result: `'${source}' copied to '${destination}/${source}'` };
      }
      if (target) fail(`cp: cannot copy '${source}' to '${destination}': File exists`);
      if (!validName(destination)) fail(`cp: cannot copy '${source}' to '${destination}': Invalid character`);
      here.contents[destination] = copyOf(item, now());
      return { result: `'${source}' copied to '${destination}'` };
    },
  },

  rm: {
    description: "Remove a file or directory (with everything in it) of the current directory.",
    effect: "write",
    input: bfclInput({ file_name: { type: "string", description: "The file or directory to remove." } }, [
      "file_name",
    ]),
    run: ({ state, args, fail }) => {
      const name = args.file_name as string;
      if (name === "." || name === "..")
        fail(`rm: refusing to remove '.' or '..' directory: skipping '${name}'`);
      const here = current(state);
      if (!here.contents[name]) fail(`rm: cannot remove '${name}': No such file or directory`);
      delete here.contents[name];
      return { result: `'${name}' removed` };
    },
  },

  rmdir: {
    description: "Remove an empty directory of the current directory.",
    effect: "write",
    input: bfclInput({ dir_name: { type: "string", description: "The directory to remove (no path)." } }, [
      "dir_name",
    ]),
    run: ({ state, args, fail }) => {
      const name = args.dir_name as string;
      const here = current(state);
      const entry = here.contents[name];
      if (!entry) return fail(`rmdir: failed to remove '${name}': No such file or directory`);
      if (entry.type !== "directory") return fail(`rmdir: failed to remove '${name}': Not a directory`);
      if (Object.keys(entry.contents).length > 0)
        fail(`rmdir: failed to remove '${name}': Directory not empty`);
      delete here.contents[name];
      return { result: `'${name}' removed` };
    },
  },

  du: {
    description:
      "Estimate the disk usage of the current directory and everything in it (bytes of file content).",
    effect: "read",
    input: bfclInput({
      human_readable: {
        type: "boolean",
        description: "Give the size with a unit (B, KB, MB, ...) instead of bytes.",
        default: false,
      },
    }),
    run: ({ state, args }) => {
      let size = sizeOf(current(state));
      if (args.human_readable !== true) return { disk_usage: `${size} bytes` };
      for (const unit of ["B", "KB", "MB", "GB", "TB"]) {
        if (size < 1024) return { disk_usage: `${size.toFixed(2)} ${unit}` };
        size /= 1024;
      }
      return { disk_usage: `${size.toFixed(2)} PB` };
    },
  },
};

export const fileSystem = defineEnvironment<FileSystemState>({
  name: "bfcl-file-system",
  description:
    "A BFCL-style file system: navigate directories, create, write, read, search, compare, copy, move and " +
    "remove files and directories, one name in the current directory at a time.",
  file: "src/envs/corpus/file-system.ts",
  initialState: INITIAL_STATE,
  tools,
});
