import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  allFunctions,
  BfclBackendHost,
  type BfclMultiTurnItem,
  callToArguments,
  checkMultiTurn,
  collectMultiTurnResults,
  docParameterOrder,
  type ItemRun,
  loadBfclMultiTurn,
  missingResults,
  NEW_FUNCTIONS_MESSAGE,
  normaliseModelTurns,
  parseCallString,
  parsePythonCall,
  pythonToJson,
  runBfclMultiTurnItem,
  scoreMultiTurn,
  worldSpecOf,
} from "../../src/bench/bfcl/index.js";
import type { PyValue } from "../../src/bench/envsim/python-literal.js";
import { TerrariumError } from "../../src/core/errors.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { BFCL_DIR } from "../helpers/bfcl.js";
import { FIXTURES } from "../helpers/paths.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/**
 * BFCL multi-turn on small backends written in BFCL's style (test/fixtures/bfcl-multi-turn): the call
 * syntax of the ground truth, the host running the Python classes, BFCL's multi-turn checker, and the
 * planner with and without GATS on the real backends, scripted over an OpenAI-compatible server.
 */
const DIR = join(FIXTURES, "bfcl-multi-turn");
const BACKENDS = {
  dir: join(DIR, "backends"),
  modules: { NotesAPI: "notes_api", TinyFileSystem: "tiny_file_system", TinyMathAPI: "tiny_math_api" },
  stateless: ["TinyMathAPI"],
};
const DOC_FILES = {
  NotesAPI: "notes_api.json",
  TinyFileSystem: "tiny_file_system.json",
  TinyMathAPI: "tiny_math_api.json",
};
const load = (...categories: string[]) => loadBfclMultiTurn(DIR, categories, { funcDocFiles: DOC_FILES });
const itemById = (id: string): BfclMultiTurnItem => {
  const item = load("multi_turn_base", "multi_turn_miss_func", "multi_turn_long_context").find(
    (candidate) => candidate.id === id,
  );
  if (!item) throw new Error(`no fixture item ${id}`);
  return item;
};

let host: BfclBackendHost;
beforeAll(async () => {
  host = await BfclBackendHost.start(BACKENDS);
});
afterAll(async () => {
  await host?.close();
});

describe("Python call syntax", () => {
  it("reads keyword and positional arguments with Python literals", () => {
    const call = parsePythonCall(
      `f('a, b', "it's", -3, 2.5, -1e3, True, None, [1, (2, 3)], {'k': [False]}, x='say "hi"\\n', y=(), z=(1,))`,
    );
    expect(call.name).toBe("f");
    expect(call.args.map(pythonToJson)).toEqual([
      "a, b",
      "it's",
      -3,
      2.5,
      -1000,
      true,
      null,
      [1, [2, 3]],
      { k: [false] },
    ]);
    expect(call.kwargs.map(([key, value]) => [key, pythonToJson(value)])).toEqual([
      ["x", 'say "hi"\n'],
      ["y", []],
      ["z", [1]],
    ]);
    // Python keeps the int/float and tuple/list distinctions.
    expect(call.args[3]).toEqual({ type: "float", value: 2.5 });
    expect(call.args[7]).toMatchObject({ type: "list", items: [{ type: "int" }, { type: "tuple" }] });
    expect(parsePythonCall("ls()")).toEqual({ name: "ls", args: [], kwargs: [] });
    expect(parsePythonCall(" cd( folder = '..' , ) ").kwargs[0]?.[0]).toBe("folder");
    // Dict keys as json.dumps writes them; True == 1 in Python, so they are one key.
    expect(
      pythonToJson(parsePythonCall("f({1: 'a', None: 'b', 2.5: 'c', True: 'd'})").args[0] as PyValue),
    ).toEqual({
      1: "d",
      null: "b",
      2.5: "c",
    });
  });

  it("refuses what is not a call with literal arguments", () => {
    for (const bad of [
      "cd",
      "cd(folder='a'",
      "cd(folder='a')x",
      "f(a=1, 2)",
      "f(a=1, a=2)",
      "f(x=g(1))",
      "f(x=y)",
      "f(*args)",
      "f('unterminated)",
      "f(1,,2)",
      "f([1, 2)",
    ])
      expect(() => parsePythonCall(bad), bad).toThrow(TerrariumError);
  });

  it("names positional arguments by the function doc's parameter order", () => {
    const docs = [
      { name: "sort", parameters: { properties: { file_name: {} } } },
      { name: "post", parameters: { properties: { content: {}, tags: {}, mentions: {} } } },
    ];
    const order = docParameterOrder(docs);
    expect(parseCallString("sort('final_report.pdf')", order)).toEqual({
      name: "sort",
      arguments: { file_name: "final_report.pdf" },
    });
    expect(parseCallString("post('hi', mentions=['@a'], tags=['#b'])", order)).toEqual({
      name: "post",
      arguments: { content: "hi", mentions: ["@a"], tags: ["#b"] },
    });
    expect(() => parseCallString("sort('a', 'b')", order)).toThrow(/takes 1 parameters/);
    expect(() => parseCallString("unknown('a')", order)).toThrow(/parameters are unknown/);
    expect(() => callToArguments(parsePythonCall("sort('a', file_name='b')"), order)).toThrow(/both/);
  });

  it("reads every ground-truth call of BFCL's 200 multi-turn base items", () => {
    const items = loadBfclMultiTurn(BFCL_DIR, ["multi_turn_base"]);
    expect(items).toHaveLength(200);
    let calls = 0;
    let positional = 0;
    for (const item of items) {
      const order = docParameterOrder(allFunctions(item));
      for (const turn of item.groundTruth)
        for (const text of turn) {
          const parsed = parsePythonCall(text);
          if (parsed.args.length > 0) positional++;
          const call = callToArguments(parsed, order);
          expect(
            allFunctions(item).some((doc) => doc.name === call.name),
            text,
          ).toBe(true);
          calls++;
        }
    }
    expect(calls).toBeGreaterThan(900);
    expect(positional).toBeGreaterThan(30);
  });
});

describe("loading BFCL multi-turn items", () => {
  it("reads items, answers and function docs; withholds miss_func functions until their turn", () => {
    const [base0] = load("multi_turn_base");
    expect(base0?.involvedClasses).toEqual(["NotesAPI", "TinyFileSystem"]);
    expect(base0?.functions.map((doc) => doc.name)).toContain("touch");
    expect(base0?.groundTruth[2]).toEqual(["cat('todo.txt')", `add_note(title='todo', body="buy milk")`]);
    expect(base0?.longContext).toBe(false);

    const [missFunc] = load("multi_turn_miss_func");
    expect(missFunc?.functions.map((doc) => doc.name)).not.toContain("touch");
    expect(Object.keys(missFunc?.missedFunctions ?? {})).toEqual(["2"]);
    expect(missFunc?.missedFunctions[2]?.map((doc) => doc.name)).toEqual(["touch"]);
    expect(missFunc?.question[2]).toEqual([]);

    const [longContext] = load("multi_turn_long_context");
    expect(longContext?.longContext).toBe(true);

    // BFCL's own data and class -> doc table.
    const real = loadBfclMultiTurn(BFCL_DIR, ["multi_turn_base"]);
    expect(real[0]?.functions.some((doc) => doc.name === "post_tweet")).toBe(true);
    // Classes of your own: doc files named after the class (NotesAPI -> notes_api.json) need no table.
    expect(loadBfclMultiTurn(DIR, ["multi_turn_base"])[0]?.functions.map((doc) => doc.name)).toContain(
      "touch",
    );
    expect(() => load("multi_turn_miss_param")).toThrow(/no BFCL file/);
    expect(() => load("simple")).toThrow(/not a multi-turn category/);
  });
});

describe("the BFCL backend host", () => {
  const notes = () =>
    host.createWorld({
      classes: ["NotesAPI"],
      config: { NotesAPI: { notes: { "1": { title: "first", body: "hello" } }, note_counter: 2 } },
      longContext: false,
    });

  it("records results as BFCL does and keeps what a failing call changed", async () => {
    const world = await notes();
    const run = async (call: Parameters<BfclBackendHost["execute"]>[1]) =>
      (await host.execute(world, call)).result;
    expect(await run({ name: "add_note", arguments: { title: "a", body: "b" } })).toBe('{"note_id": 2}');
    expect(await run({ source: "count_notes()" })).toBe("2");
    expect(await run({ source: "read_note(9)" })).toBe('{"error": "no note with id 9"}');
    expect(await run({ source: "add_notes(titles=['x', '', 'y'])" })).toBe(
      "Error during execution: a note needs a title",
    );
    expect(await run({ name: "nope", arguments: {} })).toBe(
      "Error during execution: name 'nope' is not defined",
    );
    expect(await run({ name: "exit", arguments: {} })).toBe(
      "Error during execution: Function call exit is not allowed.",
    );
    expect(await run({ name: "add_note", arguments: { body: "no title" } })).toMatch(
      /^Error during execution: .*missing 1 required positional argument: 'title'/,
    );
    expect(await run({ name: "add_note", arguments: '{"title": "from text"}' })).toBe('{"note_id": 4}');
    // 'x' stayed although add_notes raised after adding it; private attributes are not state.
    const state = (await host.state(world)) as { NotesAPI: Record<string, any> };
    expect(Object.keys(state.NotesAPI).sort()).toEqual(["long_context", "note_counter", "notes", "owner"]);
    expect(Object.values(state.NotesAPI.notes).map((note: any) => note.title)).toEqual([
      "first",
      "a",
      "x",
      "from text",
    ]);
    await host.dispose(world);
  });

  it("loads the long-context scenario, forks worlds apart and compares public attributes with Python !=", async () => {
    const long = await host.createWorld({ classes: ["NotesAPI"], config: {}, longContext: true });
    expect((await host.execute(long, { source: "list_titles()" })).result).toBe(
      '{"titles": ["filler 0", "filler 1", "filler 2"]}',
    );

    const fsConfig = itemById("multi_turn_base_0").initialConfig;
    const spec = { classes: ["TinyFileSystem"], config: fsConfig, longContext: false };
    const a = await host.createWorld(spec);
    await host.execute(a, { source: "cd('docs')" });
    const b = await host.fork(a);
    await host.execute(b, { source: "touch(file_name='new.txt')" });
    expect((await host.execute(a, { source: "ls()" })).result).toBe(
      '{"current_directory_content": ["old.txt"]}',
    );
    expect((await host.execute(b, { source: "ls()" })).result).toBe(
      '{"current_directory_content": ["new.txt", "old.txt"]}',
    );
    const differ = await host.compare(b, a);
    expect(differ).toMatchObject({ valid: false, className: "TinyFileSystem" });
    expect(Object.keys((differ as { differences: object }).differences)).toEqual(["root"]);
    // The same tree reached another way, with another (private) current directory: equal.
    const c = await host.createWorld(spec);
    await host.execute(c, { source: "cd('docs')" });
    await host.execute(c, { source: "touch('new.txt')" });
    await host.execute(c, { source: "cd('..')" });
    expect(await host.compare(c, b)).toEqual({ valid: true });
    // A directory's parent is a back-reference in the JSON state.
    const state = (await host.state(c)) as any;
    expect(state.TinyFileSystem.root.contents.docs.parent).toEqual({ $ref: "#/TinyFileSystem/root" });
    await host.dispose(long, a, b, c);
  });

  it("keeps floats: the configuration read by Python, whole numbers for float parameters, boxed numbers", async () => {
    const line = JSON.stringify({ initial_config: {} }).replace("{}", '{"NotesAPI": {"note_counter": 5.0}}');
    const fromText = await host.createWorld({
      classes: ["NotesAPI"],
      config: { NotesAPI: { note_counter: 5 } },
      longContext: false,
      configSource: { json: line, key: "initial_config" },
    });
    expect((await host.execute(fromText, { source: "add_note('t')" })).result).toBe('{"note_id": 5.0}');
    const fromObject = await host.createWorld({
      classes: ["NotesAPI"],
      config: { NotesAPI: { note_counter: 5 } },
      longContext: false,
    });
    expect((await host.execute(fromObject, { source: "add_note('t')" })).result).toBe('{"note_id": 5}');

    const math = (floats: boolean) =>
      host.createWorld({
        classes: ["TinyMathAPI"],
        config: {},
        longContext: false,
        ...(floats ? { floatParameters: { add: { a: "float", b: "float" } } } : {}),
      });
    const plain = await math(false);
    const typed = await math(true);
    const add = { name: "add", arguments: { a: 1, b: 2 } };
    expect((await host.execute(plain, add)).result).toBe('{"result": 3}');
    expect((await host.execute(typed, add)).result).toBe('{"result": 3.0}');
    expect((await host.execute(plain, { source: "add(1, 2.0)" })).result).toBe('{"result": 3.0}');
    // A boxed Number is how terrarium's float-preserving JSON reader marks 1.0.
    const boxed = { name: "add", arguments: { a: new Number(1), b: 2 } };
    expect((await host.execute(plain, boxed)).result).toBe('{"result": 3.0}');
    await host.dispose(fromText, fromObject, plain, typed);
  });

  it("stops a call past its time limit and rebuilds the worlds from their calls", async () => {
    const quick = await BfclBackendHost.start({ ...BACKENDS, timeoutMs: 1500 });
    try {
      const world = await quick.createWorld({ classes: ["NotesAPI"], config: {}, longContext: false });
      const other = await quick.createWorld({ classes: ["NotesAPI"], config: {}, longContext: false });
      await quick.execute(world, { source: "add_note('kept')" });
      await quick.execute(other, { source: "add_note('also kept')" });
      const slow = await quick.execute(world, { source: "wait(5)" });
      expect(slow.lost).toBe(true);
      expect(slow.result).toMatch(/^Error during execution: the call ran longer than 1500 ms/);
      expect((await quick.execute(world, { source: "list_titles()" })).result).toBe('{"titles": ["kept"]}');
      const crash = await quick.execute(other, { source: "crash()" });
      expect(crash.lost).toBe(true);
      expect((await quick.execute(other, { source: "list_titles()" })).result).toBe(
        '{"titles": ["also kept"]}',
      );
      expect(quick.callsOf(world)).toEqual([{ source: "add_note('kept')" }, { source: "list_titles()" }]);
    } finally {
      await quick.close();
    }
  });

  it("serves the backend folder of an installed bfcl_eval, even when the package itself does not import", async () => {
    const root = mkdtempSync(join(tmpdir(), "terrarium-bfcl-installed-"));
    const folder = join(root, "bfcl_eval", "eval_checker", "multi_turn_eval", "func_source_code");
    cpSync(BACKENDS.dir, folder, { recursive: true });
    writeFileSync(join(root, "bfcl_eval", "__init__.py"), "import a_module_nobody_installed\n");
    writeFileSync(join(root, "bfcl_eval", "eval_checker", "__init__.py"), "");
    writeFileSync(join(root, "bfcl_eval", "eval_checker", "multi_turn_eval", "__init__.py"), "");
    const installed = await BfclBackendHost.start({ ...BACKENDS, dir: folder });
    try {
      const item = itemById("multi_turn_base_0");
      expect(await checkMultiTurn(item, item.groundTruth, installed)).toMatchObject({ valid: true });
    } finally {
      await installed.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("says which backend module is missing", async () => {
    await expect(
      host.createWorld({ classes: ["GorillaFileSystem"], config: {}, longContext: false }),
    ).rejects.toThrow(/no gorilla_file_system\.py/);
    await expect(host.createWorld({ classes: ["Unknown"], config: {}, longContext: false })).rejects.toThrow(
      /no unknown\.py \(for Unknown\)/,
    );
    await expect(BfclBackendHost.start({ dir: join(DIR, "nowhere") })).rejects.toThrow(/does not exist/);
  });
});

describe("BFCL's multi-turn checker", () => {
  const base0 = () => itemById("multi_turn_base_0");
  const right = () => [
    [
      { name: "cd", arguments: { folder: "docs" } },
      { name: "touch", arguments: { file_name: "todo.txt" } },
    ],
    [{ name: "echo", arguments: { content: "buy milk", file_name: "todo.txt" } }],
    [
      { name: "cat", arguments: { file_name: "todo.txt" } },
      { name: "add_note", arguments: { title: "todo", body: "buy milk" } },
    ],
  ];

  it("passes the ground truth itself and equivalent calls in any accepted shape", async () => {
    for (const item of load("multi_turn_base", "multi_turn_miss_func", "multi_turn_long_context"))
      expect(await checkMultiTurn(item, item.groundTruth, host), item.id).toMatchObject({ valid: true });
    expect(await checkMultiTurn(base0(), right(), host)).toMatchObject({ valid: true });
    // BFCL's {"name": "<JSON arguments>"} calls, grouped in steps.
    const bfclStyle = [
      [[{ cd: '{"folder": "docs"}' }], [{ touch: { file_name: "todo.txt" } }], []],
      [["echo(content='buy milk', file_name='todo.txt')"]],
      [[{ cat: '{"file_name": "todo.txt"}' }, { add_note: '{"title": "todo", "body": "buy milk"}' }]],
    ];
    const verdict = await checkMultiTurn(base0(), bfclStyle, host);
    expect(verdict).toMatchObject({ valid: true });
    expect(verdict.executions[2]).toEqual({
      model: ['{"file_content": "buy milk"}', '{"note_id": 2}'],
      groundTruth: ['{"file_content": "buy milk"}', '{"note_id": 2}'],
    });
  });

  it("fails a state that differs from the ground truth's after a turn", async () => {
    const turns = right();
    turns[1] = [{ name: "echo", arguments: { content: "buy bread", file_name: "todo.txt" } }];
    const verdict = await checkMultiTurn(base0(), turns, host);
    expect(verdict).toMatchObject({
      valid: false,
      errorType: "multi_turn:instance_state_mismatch",
      turn: 1,
      details: { className: "TinyFileSystem" },
    });
    const differences = (verdict as unknown as { details: { differences: Record<string, any> } }).details
      .differences;
    expect(JSON.stringify(differences.root.model)).toContain("buy bread");
    expect(JSON.stringify(differences.root.ground_truth)).toContain("buy milk");
  });

  it("fails when a ground-truth result is missing from the model's results so far", async () => {
    const turns = right();
    turns[2] = [{ name: "add_note", arguments: { title: "todo", body: "buy milk" } }];
    const verdict = await checkMultiTurn(base0(), turns, host);
    expect(verdict).toMatchObject({
      valid: false,
      errorType: "multi_turn:execution_response_mismatch",
      turn: 2,
      details: { missing: ['{"file_content": "buy milk"}'] },
    });
    // A result from an earlier turn counts: count_notes() answered in turn 0 covers turn 1's.
    const base1 = itemById("multi_turn_base_1");
    const early = [
      [
        { name: "mean", arguments: { numbers: [2, 4, 9] } },
        { name: "add_note", arguments: { title: "mean", body: "5.0" } },
        { name: "count_notes", arguments: {} },
      ],
      [{ name: "list_titles", arguments: {} }],
    ];
    expect(await checkMultiTurn(base1, early, host)).toMatchObject({ valid: true });
    // Each ground-truth result needs its own model result.
    expect(missingResults(["a", "a", "b"], ["a", "b", "c"])).toEqual(["a"]);
  });

  it("fails an empty turn, a wrong number of turns and a result that is not a list", async () => {
    const turns = right();
    turns[1] = [];
    expect(await checkMultiTurn(base0(), turns, host)).toMatchObject({
      valid: false,
      errorType: "multi_turn:empty_turn_model_response",
      turn: 1,
    });
    expect(await checkMultiTurn(base0(), right().slice(0, 2), host)).toMatchObject({
      valid: false,
      errorType: "multi_turn:force_terminated",
      details: { modelTurns: 2, groundTruthTurns: 3 },
    });
    expect(await checkMultiTurn(base0(), { turns: [] }, host)).toMatchObject({
      valid: false,
      errorType: "multi_turn:inference_error",
    });
    // A turn whose ground truth is empty is run but not checked (miss_func's turn without the function).
    const missFunc = itemById("multi_turn_miss_func_0");
    const waited = [
      ["mkdir(dir_name='reports')"],
      [],
      ["cd(folder='reports')", "touch(file_name='summary.txt')"],
    ];
    expect(await checkMultiTurn(missFunc, waited, host)).toMatchObject({ valid: true });
    // Calls in the unchecked turn still count for the next one (the state and the results so far).
    const early = [
      ["mkdir(dir_name='reports')"],
      ["cd(folder='reports')"],
      ["touch(file_name='summary.txt')"],
    ];
    expect(await checkMultiTurn(missFunc, early, host)).toMatchObject({ valid: true });
    expect(
      normaliseModelTurns([
        [{ bad: 1, shape: 2 }, 7, "", "ls()", "[cd(folder='a, b'), pwd()]", "[x(", "f(x=y)"],
      ]),
    ).toEqual([[{ source: "ls()" }, { source: "cd(folder='a, b')" }, { source: "pwd()" }]]);
  });

  it("scores a results file per category", async () => {
    const items = load("multi_turn_base", "multi_turn_long_context");
    const wrong = right();
    wrong[2] = [{ name: "add_note", arguments: { title: "todo", body: "buy milk" } }];
    const results = collectMultiTurnResults([
      { id: "multi_turn_base_0", turns: wrong },
      { id: "multi_turn_long_context_0", result: [[["list_titles()"]]] },
      { nothing: true },
    ]);
    const score = await scoreMultiTurn(items, results, host);
    expect(score.categories).toEqual({
      multi_turn_base: { items: 2, correct: 0, errored: 0, accuracy: 0 },
      multi_turn_long_context: { items: 1, correct: 1, errored: 0, accuracy: 1 },
    });
    expect(score.overall).toBe(0.5);
    expect(score.items.map((item) => [item.id, item.errorType, item.turn])).toEqual([
      ["multi_turn_base_0", "multi_turn:execution_response_mismatch", 2],
      ["multi_turn_base_1", "multi_turn:inference_error", undefined],
      ["multi_turn_long_context_0", undefined, undefined],
    ]);
    // With options instead of a host, one is started and closed.
    const again = await scoreMultiTurn(items.slice(2), results, BACKENDS);
    expect(again.overall).toBe(1);
  });
});

describe("runBfclMultiTurnItem: the planner on the real backends", () => {
  let server: ScriptedLlmServer;
  afterEach(() => server?.close());

  type Role = "planner" | "checklist" | "judge";
  async function scripted(queues: Record<Role, ScriptStep[]>) {
    const roleOf = (body: any): Role =>
      body?.tools
        ? "planner"
        : body?.response_format?.json_schema?.name === "checklist"
          ? "checklist"
          : "judge";
    server = await startScriptedLlmServer([], {
      respond: (body) =>
        queues[roleOf(body)].shift() ?? { status: 500, error: { message: `no ${roleOf(body)} reply left` } },
    });
    return new Models({
      config: parseConfig({
        providers: {
          scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
        },
        roles: { default: "scripted:m" },
        retry: { retries: 0 },
      }),
      cache: null,
    });
  }
  const call = (...calls: Array<[string, unknown]>): ScriptStep => ({
    reply: { toolCalls: calls.map(([name, args]) => ({ name, arguments: args })) },
  });
  const answer = (text: string): ScriptStep => ({ reply: { content: text } });
  const json = (value: unknown): ScriptStep => ({ reply: { content: JSON.stringify(value) } });
  const checklist = (text: string) => json({ items: [{ description: text }] });
  const verdict = (status: "success" | "failed", reasoning: string = status) =>
    json({ items: [{ description: "the request", status, reasoning }] });
  const plannerRequests = () => server.requests.filter((request) => request.body.tools);

  it("runs the planner alone turn by turn, with real results and state, and checks it", async () => {
    const models = await scripted({
      planner: [
        call(["cd", { folder: "docs" }], ["touch", { file_name: "todo.txt" }]),
        answer("Created."),
        call(["echo", { content: "buy milk", file_name: "todo.txt" }]),
        answer("Written."),
        call(["cat", { file_name: "todo.txt" }]),
        call(["add_note", { title: "todo", body: "buy milk" }]),
        answer("It says buy milk; saved as a note."),
      ],
      checklist: [],
      judge: [],
    });
    const run = await runBfclMultiTurnItem(itemById("multi_turn_base_0"), models, {
      maxRetries: 0,
      host,
    });
    expect(run.error).toBeUndefined();
    expect(run.budgets).toHaveLength(1);
    expect(run.budgets[0]).toMatchObject({ retries: 0, correct: true, verdict: { valid: true } });
    expect(run.budgets[0]?.turns).toEqual([
      [
        { name: "cd", arguments: { folder: "docs" } },
        { name: "touch", arguments: { file_name: "todo.txt" } },
      ],
      [{ name: "echo", arguments: { content: "buy milk", file_name: "todo.txt" } }],
      [
        { name: "cat", arguments: { file_name: "todo.txt" } },
        { name: "add_note", arguments: { title: "todo", body: "buy milk" } },
      ],
    ]);
    expect(run.budgets[0]?.calls).toBe(7);
    // A multi-turn run is an ItemRun, so summariseRuns reads it as it reads single-turn ones.
    const asItemRun: ItemRun = run;
    expect(asItemRun.schemaVersion).toBe(1);
    // The backend's real result went back to the planner, and the earlier turns came with it.
    const catRequest = plannerRequests()[5]?.body;
    expect(catRequest.messages.at(-1)).toMatchObject({
      role: "tool",
      content: '{"file_content":"buy milk"}',
    });
    expect(JSON.stringify(catRequest.messages)).toContain("Go into the docs folder");
  });

  it("with GATS, retries a turn in a fork of its start and wins where the planner alone fails on state", async () => {
    const models = await scripted({
      planner: [
        // GATS run (1 retry). Turn 0.
        call(["cd", { folder: "docs" }], ["touch", { file_name: "todo.txt" }]),
        answer("Created."),
        // Turn 1, attempt 0: the wrong text and a stray file; attempt 1 from the same start: right.
        call(
          ["echo", { content: "buy bread", file_name: "todo.txt" }],
          ["touch", { file_name: "stray.txt" }],
        ),
        answer("Written."),
        call(["echo", { content: "buy milk", file_name: "todo.txt" }]),
        answer("Written."),
        // Turn 2.
        call(["cat", { file_name: "todo.txt" }], ["add_note", { title: "todo", body: "buy milk" }]),
        answer("Saved."),
        // The planner alone (budget 0 chose differently at turn 1, so it runs on its own).
        call(["cd", { folder: "docs" }], ["touch", { file_name: "todo.txt" }]),
        answer("Created."),
        call(["echo", { content: "buy bread", file_name: "todo.txt" }]),
        answer("Written."),
        call(["cat", { file_name: "todo.txt" }], ["add_note", { title: "todo", body: "buy bread" }]),
        answer("Saved."),
      ],
      checklist: [
        checklist("todo.txt created"),
        checklist("todo.txt says buy milk"),
        checklist("note saved"),
      ],
      judge: [
        verdict("success"),
        verdict("failed", "it says buy bread"),
        verdict("success"),
        verdict("success"),
      ],
    });
    const run = await runBfclMultiTurnItem(itemById("multi_turn_base_0"), models, {
      maxRetries: 1,
      backendsDir: BACKENDS.dir,
      backendOptions: { modules: BACKENDS.modules, stateless: BACKENDS.stateless },
    });
    expect(run.error).toBeUndefined();
    const [alone, withGats] = run.budgets;
    expect(withGats).toMatchObject({ retries: 1, correct: true, verdict: { valid: true } });
    // The stray file of the failed attempt never reached the chosen one's state.
    expect(withGats?.turns[1]).toEqual([
      { name: "echo", arguments: { content: "buy milk", file_name: "todo.txt" } },
    ]);
    expect(alone).toMatchObject({
      retries: 0,
      correct: false,
      verdict: {
        valid: false,
        errorType: "multi_turn:instance_state_mismatch",
        turn: 1,
        details: { className: "TinyFileSystem" },
      },
    });
    expect(withGats?.inputTokens).toBeGreaterThan(alone?.inputTokens ?? 0);
    expect(server.requests).toHaveLength(14 + 3 + 4);
  });

  it("gets a response-based verdict: the right state without the call whose result the user asked for", async () => {
    const models = await scripted({
      planner: [
        // GATS: attempt 0 writes the note without computing the mean; attempt 1 computes it.
        call(["add_note", { title: "mean", body: "5.0" }]),
        answer("Saved."),
        call(["mean", { numbers: [2, 4, 9] }]),
        call(["add_note", { title: "mean", body: "5.0" }]),
        answer("The mean is 5.0; saved."),
        call(["count_notes", {}]),
        answer("2 notes."),
        // The planner alone.
        call(["add_note", { title: "mean", body: "5.0" }]),
        answer("Saved."),
        call(["count_notes", {}]),
        answer("2 notes."),
      ],
      checklist: [checklist("mean computed and saved"), checklist("count given")],
      judge: [verdict("failed", "the mean was not computed"), verdict("success"), verdict("success")],
    });
    const run = await runBfclMultiTurnItem(itemById("multi_turn_base_1"), models, { maxRetries: 1, host });
    expect(run.error).toBeUndefined();
    expect(run.budgets[1]).toMatchObject({ correct: true });
    expect(run.budgets[0]).toMatchObject({
      correct: false,
      verdict: {
        errorType: "multi_turn:execution_response_mismatch",
        turn: 0,
        details: { missing: ['{"result": 5.0}'] },
      },
    });
    // The planner saw the backend's result of mean.
    const afterMean = plannerRequests()[3]?.body.messages.at(-1);
    expect(afterMean).toMatchObject({ role: "tool", content: '{"result":5}' });
  });

  it("offers withheld functions from their turn on, with GATS, and reads budget 0 off the same run", async () => {
    const models = await scripted({
      planner: [
        call(["mkdir", { dir_name: "reports" }]),
        answer("Done."),
        answer("I have no function to create files."),
        call(["cd", { folder: "reports" }], ["touch", { file_name: "summary.txt" }]),
        answer("Created."),
      ],
      checklist: [
        checklist("reports exists"),
        checklist("summary.txt exists"),
        checklist("summary.txt exists"),
      ],
      judge: [verdict("success"), verdict("success"), verdict("success")],
    });
    const item = itemById("multi_turn_miss_func_0");
    const run = await runBfclMultiTurnItem(item, models, { maxRetries: 1, host });
    expect(run.error).toBeUndefined();
    expect(run.budgets.map((budget) => [budget.retries, budget.correct])).toEqual([
      [0, true],
      [1, true],
    ]);
    // One run served both budgets: budget 0 is the planner's share.
    expect(plannerRequests()).toHaveLength(5);
    expect(run.budgets[0]?.calls).toBe(5);
    expect(run.budgets[1]?.calls).toBe(5 + 3 + 3);
    const toolNames = (index: number) =>
      plannerRequests()[index]?.body.tools.map((tool: any) => tool.function.name) as string[];
    expect(toolNames(0)).not.toContain("touch");
    expect(toolNames(2)).not.toContain("touch");
    expect(toolNames(3)).toContain("touch");
    expect(JSON.stringify(plannerRequests()[3]?.body.messages)).toContain(NEW_FUNCTIONS_MESSAGE);
    expect(worldSpecOf(item).configSource?.key).toBe("initial_config");
  });

  it("refuses to run without BFCL's backends", async () => {
    const models = await scripted({ planner: [], checklist: [], judge: [] });
    await expect(
      runBfclMultiTurnItem(itemById("multi_turn_base_0"), models, { maxRetries: 0 }),
    ).rejects.toThrow(/give --backends <dir>/);
  });
});
