import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { binaryTextArray } from "../../src/sessions/postgres-store.js";
import { postgresAvailable, TEST_POSTGRES } from "../helpers/postgres.js";

/**
 * A group commit sends its texts (history entries, changes: JSON full of quotes) as binary `text[]`
 * parameters rather than array literals: what the server reads must be exactly the strings given.
 */
const withPostgres = postgresAvailable("Postgres binary text arrays");

describe.runIf(withPostgres)("binary text[] parameters", () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: TEST_POSTGRES });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  const roundTrip = async (values: Array<string | null>) => {
    const { rows } = await client.query<{ a: Array<string | null> | null; n: number | null }>(
      "SELECT $1::text[] AS a, cardinality($1::text[]) AS n",
      [binaryTextArray(values)],
    );
    return rows[0];
  };

  it("carries every string as it is: quotes, backslashes, braces, commas, unicode, empty, NULL", async () => {
    const values = [
      JSON.stringify({ a: 'say "hi"', b: "back\\slash", c: "{x,y}", d: "NULL", e: "tab\there" }),
      "",
      null,
      "plain",
      "é ü ß 中文 🐢 \u2028",
      '"',
      "\\",
      "NULL",
      " spaced ",
      "x".repeat(70_000),
    ];
    const row = await roundTrip(values);
    expect(row?.a).toEqual(values);
    expect(row?.n).toBe(values.length);
  });

  it("an empty array and an array of NULLs", async () => {
    expect((await roundTrip([]))?.a).toEqual([]);
    expect((await roundTrip([null, null]))?.a).toEqual([null, null]);
  });

  it("a text the server may not hold (a NUL character) is refused, as in a literal", async () => {
    await expect(roundTrip(["a\u0000b"])).rejects.toThrow();
  });
});
