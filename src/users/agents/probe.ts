import { connect } from "node:net";
import { TerrariumError } from "../../core/errors.js";

/** Why a connection could not be made, in words, for the codes a wrong address gives. */
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: "connection refused: nothing listens there",
  ENOTFOUND: "the host name does not resolve",
  EAI_AGAIN: "the host name could not be resolved (DNS did not answer)",
  EHOSTUNREACH: "the host is unreachable",
  ENETUNREACH: "the network is unreachable",
  ECONNRESET: "the connection was reset",
};

/**
 * One TCP connection to the host and port of `url`, so an agent that is not running is found before any
 * model is paid. Only reachability is checked (any listener passes): what the agent answers is the run's
 * business. A probe that neither connects nor fails within `timeoutMs` passes: slow is not absent.
 */
export async function probeReachable(label: string, url: string, timeoutMs = 5_000): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TerrariumError("INVALID_INPUT", `${label}: "${url}" is not a URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return;
  const port = Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  const failure = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ host, port });
    const done = (why: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once("connect", () => done(undefined));
    socket.once("error", (error: NodeJS.ErrnoException) =>
      done(UNREACHABLE[error.code ?? ""] ?? error.message),
    );
  });
  if (failure !== undefined)
    throw new TerrariumError("INVALID_INPUT", `${label}: cannot reach ${parsed.origin} (${failure})`);
}
