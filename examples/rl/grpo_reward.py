"""A sketch of a TRL GRPO reward function backed by a terrarium task episode.

Each completion is the model's plan of tool calls for one task. The reward function replays those calls
in a fresh episode of that task (reset with task_id, one call_tool per call, then finish) and returns
the episode's reward: tau2's database check and the task's other checks, computed by terrarium.

    terrarium serve tau2-retail --tasks tasks.json --max-steps 40
    # the dataset has a "prompt" column (the task's instruction and tools) and a "task_id" column

    from trl import GRPOConfig, GRPOTrainer
    trainer = GRPOTrainer(model=..., reward_funcs=[terrarium_reward], args=GRPOConfig(...),
                          train_dataset=dataset)

TRL passes the dataset's other columns to reward functions as keyword arguments, so `task_id` arrives
as a list with one entry per completion. A sketch: parse the calls the way your chat template writes
them; run episodes in parallel (one connection each) for real throughput.
"""

import json
import re

from openenv.core import GenericEnvClient

ENV_URL = "http://127.0.0.1:8080/openenv"
MAX_CALLS = 40

# One call per <tool_call>{"name": ..., "arguments": {...}}</tool_call> block (a common chat template form).
TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def parse_calls(completion):
    """The tool calls a completion makes; text that is not a call is ignored, a broken call ends the plan."""
    text = completion if isinstance(completion, str) else "".join(m.get("content", "") for m in completion)
    calls = []
    for match in TOOL_CALL.finditer(text):
        try:
            call = json.loads(match.group(1))
        except json.JSONDecodeError:
            break
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            break
        arguments = call.get("arguments")
        calls.append({"name": call["name"], "arguments": arguments if isinstance(arguments, dict) else {}})
    return calls[:MAX_CALLS]


def episode_reward(env, task_id, calls):
    """Replays the calls in a new episode of the task and returns its reward (0.0 when it has none)."""
    result = env.reset(task_id=str(task_id))
    for call in calls:
        if result.done:  # the step limit (or the model's own finish call) ended the episode
            break
        result = env.step({"type": "call_tool", "tool_name": call["name"], "arguments": call["arguments"]})
    if not result.done:
        result = env.step({"type": "call_tool", "tool_name": "finish", "arguments": {}})
    # Checks that need a judge model are null and left out of the reward unless serve has one configured.
    return float(result.reward) if result.reward is not None else 0.0


def terrarium_reward(completions, task_id, **kwargs):
    """TRL reward function: one float per completion."""
    rewards = []
    with GenericEnvClient(base_url=ENV_URL).sync() as env:
        for completion, task in zip(completions, task_id):
            rewards.append(episode_reward(env, task, parse_calls(completion)))
    return rewards


if __name__ == "__main__":
    # Try it against a running server: the first tau2 retail task, with a plan that only looks a user up.
    plan = '<tool_call>{"name": "find_user_id_by_name_zip", "arguments": {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}}</tool_call>'
    print(terrarium_reward([plan], task_id=["0"]))
