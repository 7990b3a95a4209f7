"""One RL rollout against terrarium with OpenEnv's own client (GenericEnvClient, from openenv-core).

    terrarium serve tau2-retail --tasks tasks.json        # OpenEnv at http://127.0.0.1:8080/openenv
    python examples/rl/rollout.py --url http://127.0.0.1:8080/openenv --task 0 --replay tasks.json

The policy replays the task's ground-truth actions (from --replay) so the loop runs without a model: put
your model where `policy` is. OpenEnv's client sends no Authorization header, so serve without --token
(or behind a proxy that adds it). The last line printed is JSON: {"reward", "reward_breakdown", ...}.
"""

import argparse
import json

from openenv.core import GenericEnvClient


def replay_policy(task_id, tasks_file):
    """A stand-in for a model: the task's ground-truth calls (tau2 or terrarium format), then finish."""
    calls = []
    if tasks_file and task_id is not None:
        with open(tasks_file, encoding="utf-8") as handle:
            document = json.load(handle)
        tasks = document if isinstance(document, list) else document["tasks"]
        task = next((t for t in tasks if str(t.get("id")) == task_id), {})
        criteria = task.get("evaluation_criteria") or task.get("expected") or {}
        for action in criteria.get("actions") or []:
            calls.append({"name": action["name"], "arguments": action.get("arguments") or {}})

    def policy(observation):
        if calls:
            return calls.pop(0)
        return {"name": "finish", "arguments": {"answer": "done"}}

    return policy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8080/openenv")
    parser.add_argument("--task", help="task_id to reset to (default: the server picks)")
    parser.add_argument("--replay", help="task file whose ground-truth actions the policy replays")
    parser.add_argument("--max-turns", type=int, default=50)
    args = parser.parse_args()

    # base_url is OpenEnv's: the client connects its WebSocket to <base_url>/ws.
    with GenericEnvClient(base_url=args.url).sync() as env:
        reset_kwargs = {"task_id": args.task} if args.task is not None else {}
        result = env.reset(**reset_kwargs)
        print("instruction:", str(result.observation.get("instruction", "(none)"))[:200])

        listed = env.step({"type": "list_tools"})
        print("tools:", ", ".join(tool["name"] for tool in listed.observation["tools"]))

        policy = replay_policy(args.task, args.replay)
        for _ in range(args.max_turns):
            if result.done:
                break
            call = policy(result.observation)
            result = env.step(
                {"type": "call_tool", "tool_name": call["name"], "arguments": call["arguments"]}
            )
            error = result.observation.get("error")
            print(call["name"], "->", f"error: {error['message']}" if error else "ok")

        metadata = result.observation.get("metadata") or {}
        print(
            json.dumps(
                {
                    "reward": result.reward,
                    "done": result.done,
                    "reward_breakdown": metadata.get("reward_breakdown"),
                    "session_id": metadata.get("session_id"),
                    "state": env.state(),
                }
            )
        )


if __name__ == "__main__":
    main()
