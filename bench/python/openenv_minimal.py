"""A minimal OpenEnv-style environment server, the Python baseline of `npm run bench -- rl`.

OpenEnv's own package cannot be installed here, so this is a small FastAPI app that serves its WebSocket
`/ws` with the same messages and the same work per message as OpenEnv's server does (one environment and
one single-thread executor per connection; the environment's `step` runs in that executor; observations
are answered as `{"observation": {...}, "reward": ..., "done": ...}` with `reward`, `done` and `metadata`
taken out of the observation). Messages are checked by hand rather than with pydantic models, so it does
at most the work OpenEnv's server does: a lower bound on its cost per step.

The environment is a counter with two MCP-style tools, `increment` (a write) and `get_count` (a read).

Needs Debian's python3-fastapi, python3-uvicorn and python3-websockets. Run:

    python3 bench/python/openenv_minimal.py [--host 127.0.0.1] [--port 0] [--max-sessions 64]

It prints {"port": n} on stdout once it accepts connections, and exits when its stdin closes.
"""

import argparse
import asyncio
import json
import socket
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import uvicorn
from fastapi import FastAPI, WebSocket, WebSocketDisconnect

TOOLS = [
    {
        "name": "increment",
        "description": "Add `by` (default 1) to the counter and return its new value.",
        "input_schema": {"type": "object", "properties": {"by": {"type": "integer"}}},
    },
    {
        "name": "get_count",
        "description": "Return the counter's value.",
        "input_schema": {"type": "object", "properties": {}},
    },
]


class InvalidMessage(Exception):
    """A message or action of the wrong shape: answered as VALIDATION_ERROR."""


class CounterEnvironment:
    """The environment: a counter, an episode id and a step count."""

    def __init__(self):
        self.count = 0
        self.episode_id = None
        self.step_count = 0

    def reset(self, seed=None, episode_id=None):
        self.count = 0
        self.step_count = 0
        self.episode_id = episode_id or str(uuid.uuid4())
        return {"tools": TOOLS, "done": False, "reward": None, "metadata": {"status": "ready"}}

    def step(self, action):
        self.step_count += 1
        if action["type"] == "list_tools":
            return {"tools": TOOLS, "done": False, "reward": None, "metadata": {}}
        name = action["tool_name"]
        args = action["arguments"]
        result, error = None, None
        if name == "increment":
            by = args.get("by", 1)
            if isinstance(by, int) and not isinstance(by, bool):
                self.count += by
                result = {"count": self.count}
            else:
                error = {"error_type": "invalid_args", "message": "by must be an integer"}
        elif name == "get_count":
            result = {"count": self.count}
        else:
            error = {"error_type": "tool_not_found", "message": f"no tool {name!r}"}
        return {
            "tool_name": name,
            "result": result,
            "error": error,
            "done": False,
            "reward": None,
            "metadata": {},
        }

    def state(self):
        return {"episode_id": self.episode_id, "step_count": self.step_count}


def check_fields(value, allowed, what):
    if not isinstance(value, dict):
        raise InvalidMessage(f"{what} must be an object")
    extra = [key for key in value if key not in allowed]
    if extra:
        raise InvalidMessage(f"{what} has an unexpected field {extra[0]!r}")


def read_action(data):
    """The step's data as an MCP action (list_tools or call_tool), as OpenEnv's deserialize_action reads it."""
    if not isinstance(data, dict):
        raise InvalidMessage("the action must be an object")
    kind = data.get("type")
    if kind == "list_tools":
        check_fields(data, ("type", "metadata"), "list_tools")
        return {"type": "list_tools"}
    if kind == "call_tool":
        check_fields(data, ("type", "tool_name", "arguments", "metadata"), "call_tool")
        if not isinstance(data.get("tool_name"), str):
            raise InvalidMessage("tool_name must be a string")
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            raise InvalidMessage("arguments must be an object")
        return {"type": "call_tool", "tool_name": data["tool_name"], "arguments": arguments}
    raise InvalidMessage(f"unknown action type {kind!r}")


def as_step_result(observation):
    """OpenEnv's serialize_observation: reward and done beside the observation, metadata left out."""
    body = {key: value for key, value in observation.items() if key not in ("reward", "done", "metadata")}
    return {"observation": body, "reward": observation["reward"], "done": observation["done"]}


def build_app(max_sessions):
    app = FastAPI()
    active = {"sessions": 0}

    @app.get("/health")
    async def health():
        return {"status": "healthy"}

    @app.websocket("/ws")
    async def episode(websocket: WebSocket):
        await websocket.accept()
        if active["sessions"] >= max_sessions:
            await websocket.send_text(
                json.dumps(
                    {
                        "type": "error",
                        "data": {
                            "message": "capacity reached",
                            "code": "CAPACITY_REACHED",
                            "active_sessions": active["sessions"],
                            "max_sessions": max_sessions,
                        },
                    }
                )
            )
            await websocket.close()
            return
        active["sessions"] += 1
        loop = asyncio.get_running_loop()
        # One thread per connection: the environment is made and stepped there, never on the event loop.
        executor = ThreadPoolExecutor(max_workers=1)
        try:
            env = await loop.run_in_executor(executor, CounterEnvironment)
            while True:
                text = await websocket.receive_text()
                try:
                    message = json.loads(text)
                except json.JSONDecodeError as error:
                    answer = {"type": "error", "data": {"message": f"Invalid JSON: {error}", "code": "INVALID_JSON"}}
                    await websocket.send_text(json.dumps(answer))
                    continue
                kind = message.get("type", "") if isinstance(message, dict) else ""
                try:
                    if kind == "reset":
                        check_fields(message, ("type", "data"), "reset")
                        data = message.get("data", {})
                        check_fields(data, tuple(data) if isinstance(data, dict) else (), "reset's data")
                        kwargs = {key: data[key] for key in ("seed", "episode_id") if key in data}
                        observation = await loop.run_in_executor(executor, lambda: env.reset(**kwargs))
                        answer = {"type": "observation", "data": as_step_result(observation)}
                    elif kind == "step":
                        check_fields(message, ("type", "data"), "step")
                        action = read_action(message.get("data"))
                        observation = await loop.run_in_executor(executor, env.step, action)
                        answer = {"type": "observation", "data": as_step_result(observation)}
                    elif kind == "state":
                        check_fields(message, ("type",), "state")
                        answer = {"type": "state", "data": env.state()}
                    elif kind == "close":
                        break
                    else:
                        answer = {
                            "type": "error",
                            "data": {"message": f"Unknown message type: {kind}", "code": "UNKNOWN_TYPE"},
                        }
                except InvalidMessage as error:
                    answer = {"type": "error", "data": {"message": str(error), "code": "VALIDATION_ERROR"}}
                except Exception as error:  # the environment failed: the episode goes on
                    answer = {"type": "error", "data": {"message": str(error), "code": "EXECUTION_ERROR"}}
                await websocket.send_text(json.dumps(answer))
        except WebSocketDisconnect:
            pass
        finally:
            active["sessions"] -= 1
            executor.shutdown(wait=False)
            try:
                await websocket.close()
            except RuntimeError:
                pass

    return app


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-sessions", type=int, default=64)
    options = parser.parse_args()
    if options.max_sessions < 1:
        parser.error("--max-sessions must be 1 or more")

    # Listening before uvicorn starts: connections made after the port is printed wait in the backlog.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((options.host, options.port))
    sock.listen(512)
    config = uvicorn.Config(
        build_app(options.max_sessions), log_level="warning", lifespan="off", ws="websockets"
    )
    server = uvicorn.Server(config)

    def stop_when_stdin_closes():
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
