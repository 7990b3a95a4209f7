/**
 * An API description whose operations each reach a long chain of large shared schemas (every schema
 * refers to the next two), as Microsoft Graph's and Stripe's do: written per tool, the definitions a
 * tool reaches repeat from tool to tool and the listing grows with tools × definitions.
 */
export function webOfSchemas(operations: number, definitions: number): Record<string, unknown> {
  const schemas: Record<string, unknown> = {};
  for (let i = 0; i < definitions; i++) {
    const properties: Record<string, unknown> = {};
    for (let p = 0; p < 120; p++) properties[`field_${p}`] = { type: "string", maxLength: 40 + p };
    if (i + 1 < definitions) properties.next = { $ref: `#/components/schemas/Thing${i + 1}` };
    if (i + 2 < definitions) properties.after = { $ref: `#/components/schemas/Thing${i + 2}` };
    schemas[`Thing${i}`] = { type: "object", properties };
  }
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < operations; i++) {
    const schema = { $ref: `#/components/schemas/Thing${i % definitions}` };
    paths[`/things/${i}`] = {
      post: {
        operationId: `update_thing_${i}`,
        requestBody: { content: { "application/json": { schema } } },
        responses: { "200": { description: "ok", content: { "application/json": { schema } } } },
      },
    };
  }
  return { openapi: "3.1.0", info: { title: "web", version: "1" }, paths, components: { schemas } };
}

/** Every `$ref` under `node`. */
export function refsIn(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found);
  else if (node !== null && typeof node === "object")
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") found.push(value);
      else refsIn(value, found);
    }
  return found;
}

/**
 * An API description shaped like Microsoft Graph's: one base schema that is few objects but much text
 * (a discriminator mapping naming every derived type), and `derived` schemas built on it with `allOf`,
 * each used by `operations / derived` operations.
 */
export function textHeavyBase(operations: number, derived: number): Record<string, unknown> {
  const mapping: Record<string, string> = {};
  for (let i = 0; i < 600; i++)
    mapping[`#example.graph.derivedKindNumber${i}`] =
      `#/components/schemas/example.graph.derivedKindNumber${i}`;
  const schemas: Record<string, unknown> = {
    base: {
      type: "object",
      properties: { id: { type: "string" }, "@odata.type": { type: "string" } },
      discriminator: { propertyName: "@odata.type", mapping },
    },
  };
  for (let i = 0; i < derived; i++)
    schemas[`Derived${i}`] = {
      allOf: [
        { $ref: "#/components/schemas/base" },
        { type: "object", properties: { [`name_${i}`]: { type: "string" } } },
      ],
    };
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < operations; i++) {
    const schema = { $ref: `#/components/schemas/Derived${i % derived}` };
    paths[`/items/${i}`] = {
      patch: {
        operationId: `update_item_${i}`,
        requestBody: { content: { "application/json": { schema } } },
        responses: { "200": { description: "ok", content: { "application/json": { schema } } } },
      },
    };
  }
  return { openapi: "3.0.3", info: { title: "text", version: "1" }, paths, components: { schemas } };
}
