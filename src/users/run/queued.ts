import type { Models } from "../../models/hub.js";
import type { JobKind } from "../../queue/index.js";
import { createAgentTarget } from "../agents/index.js";
import { UserToolFactory } from "../simulator/toolbox.js";
import { USERS_RUN_JOB, type UsersJobContext, type UsersJobItem, type UsersJobResult } from "./job.js";
import { modelJudges } from "./model-judges.js";
import { playRunLines } from "./run-users.js";
import type { TranscriptLine } from "./transcript.js";

/**
 * `users run --queue`: each work item is one run (scenario, run number). A worker builds the agent
 * target, the users' toolboxes and the judges once per submission, plays the run with the same seed as
 * in process, judges it, and returns its transcript lines. Consolidation stays with the submitter.
 */
export function usersRunJob(
  modelsFor: (roles: Record<string, string>) => Models,
): JobKind<UsersJobContext, UsersJobItem, UsersJobResult> {
  return {
    kind: USERS_RUN_JOB,
    async open(context) {
      const models = modelsFor(context.roles);
      const agent = await createAgentTarget(context.agent.spec, {
        models,
        seed: context.settings.seed,
        ...(context.agent.agentTools ? { agentTools: context.agent.agentTools } : {}),
        ...(context.agent.httpConfig ? { httpConfig: context.agent.httpConfig } : {}),
        ...(context.agentTimeoutMs !== undefined
          ? { timeoutMs: Math.max(1, Math.ceil(context.agentTimeoutMs)) }
          : {}),
      });
      const toolFactory = new UserToolFactory({ models });
      const judges = context.settings.judges ? modelJudges(models) : undefined;
      const player = {
        models,
        agent,
        outDir: ".",
        ...(judges ? { judges } : {}),
        ...(context.userTemperature !== undefined ? { userTemperature: context.userTemperature } : {}),
        ...(context.agentTimeoutMs !== undefined ? { agentTimeoutMs: context.agentTimeoutMs } : {}),
      };
      return {
        async process({ payload }, item) {
          const scenario = context.scenarios.find((candidate) => candidate.id === payload.scenarioId);
          if (!scenario) throw new Error(`scenario ${payload.scenarioId} is not in the run`);
          const lines: TranscriptLine[] = [];
          const before = models.ledger.totals.costUsd;
          await playRunLines(player, context.settings, toolFactory, scenario, payload.index, (line) =>
            lines.push(line),
          );
          item.spend(models.ledger.totals.costUsd - before);
          return { lines };
        },
        async close() {
          await agent.close();
          await toolFactory.close();
          await models.close();
        },
      };
    },
  };
}
